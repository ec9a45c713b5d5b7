/** The one file that lists providers' wire formats and resolves a request to a configured provider. */
import type { ProviderConfig } from '../config/config.ts';
import { globMatch } from '../lib/glob.ts';
import { anthropicFormat } from './anthropic/anthropic-format.ts';
import { openaiFormat } from './openai/openai-format.ts';
import { responsesFormat } from './responses/responses-format.ts';
import type { FormatAdapter, WireFormat } from './provider.ts';

export const FORMATS: Readonly<Record<WireFormat, FormatAdapter>> = {
  openai: openaiFormat,
  anthropic: anthropicFormat,
  responses: responsesFormat,
};

/** The configured provider format that serves each wire format (Responses: OpenAI providers). */
export const PROVIDER_FORMAT: Readonly<Record<WireFormat, ProviderConfig['format']>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  responses: 'openai',
};

export interface ResolvedProvider {
  config: ProviderConfig;
  adapter: FormatAdapter;
}

export class ProviderRegistry {
  constructor(private readonly providers: readonly ProviderConfig[]) {}

  /** The first provider serving wire `format` whose model globs match `model`, or undefined. */
  resolve(format: WireFormat, model: string): ResolvedProvider | undefined {
    const providerFormat = PROVIDER_FORMAT[format];
    const config = this.providers.find(
      (p) => p.format === providerFormat && p.models.some((g) => globMatch(g, model)),
    );
    return config ? { config, adapter: FORMATS[format] } : undefined;
  }

  /** Every configured provider, in config order. */
  all(): readonly ProviderConfig[] {
    return this.providers;
  }
}

#!/usr/bin/env node
// Launcher for the `oda-gateway` command: loads tsx from this package's own node_modules, then runs
// the TypeScript command router in scripts/cli.ts in this same process.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../scripts/cli.ts');
process.exitCode = await runCli(process.argv.slice(2));

/** The machine a run was measured on, printed with every report. */
import os from 'node:os';
import { readFileSync } from 'node:fs';

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  /** CPUs this process may use (cgroup/affinity aware), when Node can tell. */
  availableParallelism: number;
  memoryGB: number;
  node: string;
  platform: string;
  kernel: string;
}

function cpuModel(): string {
  const fromOs = os.cpus()[0]?.model?.trim();
  if (fromOs) return fromOs;
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    return m?.[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function machineInfo(): MachineInfo {
  return {
    cpuModel: cpuModel(),
    cores: os.cpus().length,
    availableParallelism: os.availableParallelism(),
    memoryGB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
  };
}

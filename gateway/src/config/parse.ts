// Value parsers for settings. Each throws a plain Error with a short reason; config.ts wraps it in a
// ConfigError that names the setting.

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const BYTE_UNITS: Record<string, number> = { "": 1, b: 1, kb: 1_000, kib: 1_024, mb: 1_000_000, mib: 1_048_576, gb: 1_000_000_000, gib: 1_073_741_824 };

export function parseIntStrict(raw: string): number {
  if (!/^-?\d+$/.test(raw.trim())) throw new Error(`"${raw}" is not an integer`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new Error(`"${raw}" is out of range`);
  return n;
}

/** "500ms", "30s", "2m", "24h", "7d", or "0". Returns milliseconds. */
export function parseDuration(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/i.exec(raw.trim());
  if (!m) throw new Error(`"${raw}" is not a duration (use e.g. 500ms, 30s, 2m, 24h)`);
  const value = Number(m[1]);
  const unit = m[2]?.toLowerCase();
  if (!unit) {
    if (value === 0) return 0;
    throw new Error(`"${raw}" needs a unit (ms, s, m, h or d)`);
  }
  const mult = DURATION_UNITS[unit];
  if (mult === undefined) throw new Error(`"${raw}" has an unknown unit (ms, s, m, h or d)`);
  return Math.round(value * mult);
}

/** "65536", "64KiB", "1MiB", "1GB", or "-1" (unlimited). Returns bytes. */
export function parseBytes(raw: string): number {
  const t = raw.trim();
  if (t === "-1") return -1;
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(t);
  const mult = m ? BYTE_UNITS[(m[2] ?? "").toLowerCase()] : undefined;
  if (!m || mult === undefined) throw new Error(`"${raw}" is not a size (use e.g. 65536, 64KiB, 1MiB, or -1)`);
  return Math.round(Number(m[1]) * mult);
}

export function parseBool(raw: string): boolean {
  const t = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(t)) return true;
  if (["0", "false", "no", "off", ""].includes(t)) return false;
  throw new Error(`"${raw}" is not a boolean (use true or false)`);
}

export function parseList(raw: string): string[] {
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

import { SECTIONS, type Config, type SettingKey } from "./sections/index.js";
import { flagOf, type Setting } from "./section-kit.js";

export type { Config, SettingKey };
export { JWT_ALGORITHMS } from "./sections/auth.js";
export { LOG_LEVELS, type LogLevel } from "./sections/log.js";

/** A setting as the CLI reads it: its section, its flag (derived from its env name), and its former names. */
export type ReadSetting<T> = Omit<Setting<T>, "formerly"> & { section: string; flag: string; formerly?: { env: string; flag: string } };

/** Every setting of every section by config key, in the sections' order; `--help`, the docs table and the parser read this. */
export const SETTINGS: Readonly<Record<SettingKey, ReadSetting<unknown>>> = (() => {
  const out: Record<string, ReadSetting<unknown>> = {};
  const envs = new Map<string, string>();
  for (const s of SECTIONS)
    for (const [key, def] of Object.entries(s.settings) as [string, Setting<unknown>][]) {
      const { formerly, ...rest } = def;
      for (const env of formerly ? [def.env, formerly] : [def.env]) {
        const taken = envs.get(env) ?? (out[key] ? key : undefined);
        if (taken) throw new Error(`setting ${s.name}.${key}: ${env} is already ${taken}'s`); // a programming error, caught by every test
        envs.set(env, key);
      }
      out[key] = Object.freeze({
        ...rest,
        section: s.name,
        flag: flagOf(def.env),
        ...(formerly ? { formerly: { env: formerly, flag: flagOf(formerly) } } : {}),
      });
    }
  return Object.freeze(out) as Record<SettingKey, ReadSetting<unknown>>;
})();

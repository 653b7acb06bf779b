import { SETTINGS, type ReadSetting } from "./settings.js";
import { distance } from "../util/distance.js";

export { distance };

/** An environment variable that looks like a setting and is not one (ignored), and the setting it likely meant. */
export type UnknownSetting = { variable: string; didYouMean?: string };

const NAMES: readonly string[] = (Object.values(SETTINGS) as ReadSetting<unknown>[]).flatMap((s) => (s.formerly ? [s.env, s.formerly.env] : [s.env]));
const KNOWN = new Set(NAMES);
/** Prefixes two or more settings share (JWT_, STREAM_, HOOK_, NATS_, …): a variable with one is meant as a setting. */
const prefixOf = (name: string): string => name.slice(0, name.indexOf("_"));
const PREFIXES: ReadonlySet<string> = (() => {
  const count = new Map<string, number>();
  for (const n of NAMES) if (n.includes("_")) count.set(prefixOf(n), (count.get(prefixOf(n)) ?? 0) + 1);
  return new Set([...count].filter(([, c]) => c >= 2).map(([p]) => p));
})();

/**
 * The variables of `env` that are probably misspelt settings: a settings prefix but no setting of that name,
 * or one or two edits away from a setting's name (for names of 8+ characters, so PATH is not PORT). Variables
 * the gateway sets for itself (FGW_*) are left out. A misspelt setting is otherwise ignored without a word, and
 * JWT_SECERT would leave authentication off.
 */
export function unknownSettings(env: Readonly<Record<string, string | undefined>>): UnknownSetting[] {
  const out: UnknownSetting[] = [];
  for (const variable of Object.keys(env).sort()) {
    if (KNOWN.has(variable) || variable.startsWith("FGW_") || !/^[A-Z][A-Z0-9_]*$/.test(variable)) continue;
    if (isServiceLink(variable, env[variable])) continue;
    const nearest = closest(variable);
    const prefixed = variable.includes("_") && PREFIXES.has(prefixOf(variable));
    if (!prefixed && !(nearest && nearest.distance <= 2 && nearest.name.length >= 8)) continue;
    // A setting that extends the name (JWT_PUBLIC_KEY → JWT_PUBLIC_KEY_FILE) is the likelier meaning.
    const longer = NAMES.find((n) => n.startsWith(`${variable}_`));
    const near = nearest && nearest.distance <= Math.max(2, Math.floor(variable.length / 4)) ? nearest.name : undefined;
    const meant = longer ?? near;
    out.push(meant ? { variable, didYouMean: meant } : { variable });
  }
  return out;
}

/**
 * Kubernetes' service links: a Service named `nats` gives every pod NATS_SERVICE_HOST, NATS_PORT=tcp://…,
 * NATS_PORT_4222_TCP_ADDR and so on. They are not misspelt settings.
 */
function isServiceLink(name: string, value: string | undefined): boolean {
  if (/_SERVICE_(HOST|PORT)(_[A-Z0-9_]+)?$/.test(name) || /_PORT_\d+_(TCP|UDP|SCTP)(_[A-Z]+)?$/.test(name)) return true;
  return name.endsWith("_PORT") && /^(tcp|udp|sctp):\/\//.test(value ?? "");
}

function closest(v: string): { name: string; distance: number } | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of NAMES) {
    const d = distance(v, name);
    if (!best || d < best.distance) best = { name, distance: d };
  }
  return best;
}

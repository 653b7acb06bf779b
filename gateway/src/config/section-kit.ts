// What a setting and a section are, and the helpers section files declare their settings with. Each file under
// config/sections/ declares its settings and how its component's slice is built from them; config/sections/index.ts
// lists the sections, and everything else (the flat `Config`, the CLI flags, `--help`, the docs table) follows.

/** How one setting is read: its env var (the CLI flag is derived from it), its parser, its default and its doc line. */
export type Setting<T> = {
  env: string;
  doc: string;
  /** Default as shown in docs. */
  shown: string;
  default: () => T;
  parse: (raw: string) => T;
  check?: (v: T) => string | undefined;
  /** Boolean flags take no value on the command line. */
  boolean?: boolean;
  /** The setting's former env name (its flag derived the same way), still read when the new one is not given, with a deprecation warning. */
  formerly?: string;
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- settings of every value type in one table
export type SettingTable = Record<string, Setting<any>>;

/** The parsed values of a table of settings. */
export type ValuesOf<S extends SettingTable> = { readonly [K in keyof S]: ReturnType<S[K]["default"]> };

/** The CLI flag of an env name: always its kebab case (FEED_LINGER → feed-linger). */
export const flagOf = (env: string): string => env.toLowerCase().replaceAll("_", "-");

const DERIVED: unique symbol = Symbol("derived");

/** A slice field (or a whole slice) computed from settings rather than copied from one; `from` names the section's settings it covers. */
export type Derived<K extends string, I, R> = { readonly [DERIVED]: true; readonly from: readonly K[]; readonly get: (c: I) => R };
type AnyDerived = Derived<string, never, unknown>;

/** A derived field: `get` reads the config (its parameter type names what it reads); `from` lists the section's own settings it stands for. */
export const derive = <const K extends string, I, R>(from: readonly K[], get: (c: I) => R): Derived<K, I, R> => ({ [DERIVED]: true, from, get });

/** How a section's slice is made: per field, the setting copied into it or a derived value; or one derived value for the whole slice. */
export type SliceSpec<S extends SettingTable> = Readonly<Record<string, (keyof S & string) | AnyDerived>> | AnyDerived;

/** The slice a component is given, as its section's spec describes it. */
export type SliceOf<S extends SettingTable, M> =
  M extends Derived<string, never, infer R>
    ? R
    : Readonly<{ [F in keyof M]: M[F] extends keyof S ? ValuesOf<S>[M[F]] : M[F] extends Derived<string, never, infer R> ? R : never }>;

type FromOf<D> = D extends { from: readonly (infer K)[] } ? K : never;
type Covered<M> = M extends AnyDerived ? FromOf<M> : { [F in keyof M]: M[F] extends string ? M[F] : FromOf<M[F]> }[keyof M];
/** The settings of a section that no field of its slice reads (config/sections/index.ts makes that a build error). */
export type Uncovered<S extends SettingTable, M> = Exclude<keyof S & string, Covered<M>>;

export type Section<N extends string, S extends SettingTable, M extends SliceSpec<S>> = {
  /** The key of the slice in `Sections`, and the heading of the section's settings in the docs. */
  readonly name: N;
  /** One line on what the section configures (shown above its settings in `--help` and the docs). */
  readonly title: string;
  readonly settings: S;
  readonly slice: M;
  /** Builds the slice from the whole parsed config. */
  readonly build: (c: object) => SliceOf<S, M>;
};

export function section<const N extends string, S extends SettingTable, const M extends SliceSpec<S>>(def: {
  name: N;
  title: string;
  settings: S;
  slice: M;
}): Section<N, S, M> {
  const { slice } = def;
  const build = (c: object): SliceOf<S, M> => {
    if (DERIVED in slice) return (slice as AnyDerived).get(c as never) as SliceOf<S, M>;
    const out: Record<string, unknown> = {};
    for (const [field, from] of Object.entries(slice as Record<string, string | AnyDerived>))
      out[field] = typeof from === "string" ? (c as Record<string, unknown>)[from] : from.get(c as never);
    return Object.freeze(out) as SliceOf<S, M>;
  };
  return Object.freeze({ ...def, build });
}

// Parsers and checks shared by the section files (config/parse.ts has the unit parsers).

export const trimmed = (s: string): string => s.trim();
export const int = (min: number, max: number) => (v: number) => (v < min || v > max ? `must be between ${min} and ${max}` : undefined);
export const oneOf =
  <T extends string>(...values: T[]) =>
  (raw: string): T => {
    const v = raw.trim() as T;
    if (!values.includes(v)) throw new Error(`"${raw}" is not one of ${values.join(", ")}`);
    return v;
  };
export const checkHttpUrl = (v: string): string | undefined => {
  if (v === "") return undefined;
  try {
    const u = new URL(v);
    return u.protocol === "http:" || u.protocol === "https:" ? undefined : "must be an http(s) URL";
  } catch {
    return "must be an http(s) URL";
  }
};
export const positiveOrUnlimited = (v: number) => (v === 0 || v < -1 ? "must be positive, or -1 for unlimited" : undefined);
/** Dot-separated NATS subject tokens; `orEmpty` lets "" through (a derived default). */
export const subjectTokens =
  (orEmpty = false) =>
  (v: string) =>
    (orEmpty && v === "") || /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(v) ? undefined : "must be dot-separated tokens of letters, digits, _ or -";

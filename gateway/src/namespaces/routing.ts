/**
 * Which namespace a channel or a pattern belongs to. A namespace is a channel prefix of whole tokens
 * (`chat`, `app1.inbox`); channel `c` is in it when c's tokens start with the prefix's and c has at least
 * one token more. Channels outside every namespace belong to the default stream. Prefixes are never
 * prefixes of one another (the config refuses it), so a channel has at most one namespace.
 *
 * A pattern belongs to one namespace when every channel it can match is in it (`chat.>`, `chat.*.typing`),
 * to the default stream when none of its channels can be in a namespace, and otherwise it spans several
 * (`>`, `*.x` while `chat` is a namespace): one subscription follows one stream's positions, so a pattern
 * that spans is refused.
 */

/** What routing needs of a namespace: its name and its prefix's tokens. */
export type Prefixed = { readonly name: string; readonly tokens: readonly string[] };

/** Where a pattern's channels are: one namespace, the default stream, or several of them (`spans`). */
export type Route<N extends Prefixed> = { kind: "namespace"; ns: N } | { kind: "default" } | { kind: "spans"; names: string[] };

/** The name the default stream goes by in messages about spanning patterns. */
export const DEFAULT_STREAM_LABEL = "the default stream";

export class NamespaceRoutes<N extends Prefixed> {
  /** Namespaces by their prefix's first token: a channel is compared with a few prefixes at most. */
  private readonly byFirst = new Map<string, N[]>();

  constructor(readonly list: readonly N[]) {
    for (const ns of list) {
      const first = ns.tokens[0] ?? "";
      const l = this.byFirst.get(first) ?? [];
      l.push(ns);
      this.byFirst.set(first, l);
    }
  }

  get empty(): boolean {
    return this.list.length === 0;
  }

  /** The namespace of a concrete channel, or undefined (the default stream). */
  ofChannel(channel: string): N | undefined {
    if (this.list.length === 0) return undefined;
    const dot = channel.indexOf(".");
    if (dot < 0) return undefined;
    const candidates = this.byFirst.get(channel.slice(0, dot));
    if (!candidates) return undefined;
    const tokens = channel.split(".");
    return candidates.find((ns) => tokens.length > ns.tokens.length && ns.tokens.every((t, i) => tokens[i] === t));
  }

  /** Where the channels of a pattern (wildcards allowed) are. A concrete channel is a pattern too. */
  ofPattern(pattern: string): Route<N> {
    if (this.list.length === 0) return { kind: "default" };
    const p = pattern.split(".");
    const inside = this.list.find((ns) => contains(p, ns.tokens));
    if (inside) return { kind: "namespace", ns: inside };
    const touched = this.list.filter((ns) => overlaps(p, ns.tokens));
    if (touched.length === 0) return { kind: "default" };
    return { kind: "spans", names: [...touched.map((ns) => ns.name), DEFAULT_STREAM_LABEL] };
  }
}

/** Every channel matching pattern `p` is in the namespace of `prefix`: the prefix is literal in it, and more follows. */
function contains(p: readonly string[], prefix: readonly string[]): boolean {
  if (p.length <= prefix.length) return false;
  return prefix.every((t, i) => p[i] === t);
}

/** Some channel matching pattern `p` is in the namespace of `prefix`. */
function overlaps(p: readonly string[], prefix: readonly string[]): boolean {
  for (let i = 0; i < prefix.length; i++) {
    const t = p[i];
    if (t === undefined) return false;
    if (t === ">") return true;
    if (t !== "*" && t !== prefix[i]) return false;
  }
  // The prefix matched: a channel of the namespace needs one token more.
  return p.length > prefix.length;
}

/**
 * Why a spanning pattern is refused, for the `bad_channel` error: "pattern `*.x` spans namespaces chat and
 * the default stream; subscribe per namespace".
 */
export function spansMessage(pattern: string, names: readonly string[]): string {
  const list = names.length <= 2 ? names.join(" and ") : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  return `pattern \`${pattern}\` spans namespaces ${list}; subscribe per namespace`;
}

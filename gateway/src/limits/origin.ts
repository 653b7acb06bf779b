/**
 * The browser origin allowlist (ALLOWED_ORIGINS). Entries are `scheme://host[:port]`, or
 * `scheme://*.domain` for any subdomain of domain; `*` allows every origin. A request without an Origin
 * header (not a browser) is always allowed — the allowlist stops other sites' pages, not clients.
 *
 * An empty list allows every origin, except on a gateway where nothing identifies anyone (authentication
 * off, no connect hook: `thisHostsPages`). There a page of any site the user opens could read and publish
 * every channel through the user's browser, so only pages of this host are let in: a loopback origin
 * (localhost, 127.x, [::1]) or the gateway's own (the origin's host is the request's `Host`: the live page).
 */
export class OriginPolicy {
  private readonly exact = new Set<string>();
  private readonly suffixes: { scheme: string; suffix: string; port: string }[] = [];
  private readonly any: boolean;
  private readonly thisHostOnly: boolean;

  constructor(allowed: readonly string[], thisHostsPages = false) {
    for (const o of allowed) {
      const [, scheme, suffix, port = ""] = /^(https?):\/\/\*(\.[^:]+)(:\d+)?$/i.exec(o) ?? [];
      if (scheme !== undefined && suffix !== undefined) this.suffixes.push({ scheme: scheme.toLowerCase(), suffix: suffix.toLowerCase(), port });
      else if (o !== "*") this.exact.add(o.toLowerCase());
    }
    this.any = allowed.includes("*") || (allowed.length === 0 && !thisHostsPages);
    this.thisHostOnly = allowed.length === 0 && thisHostsPages;
  }

  /** Whether a page of `origin` may use the gateway; `host` is the request's Host header (same-origin pages). */
  allows(origin: string, host = ""): boolean {
    if (this.any || origin === "") return true;
    const o = origin.toLowerCase();
    if (this.thisHostOnly) return isLoopbackOrigin(o) || (host !== "" && hostOf(o) === host.toLowerCase());
    if (this.exact.has(o)) return true;
    const [, scheme, name, port = ""] = /^(https?):\/\/([^/:]+)(:\d+)?$/.exec(o) ?? [];
    if (scheme === undefined || name === undefined) return false;
    return this.suffixes.some((s) => s.scheme === scheme && port === s.port && name.endsWith(s.suffix) && name.length > s.suffix.length);
  }
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}

function isLoopbackOrigin(origin: string): boolean {
  const m = /^https?:\/\/(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/.exec(origin);
  return m !== null;
}

/**
 * The browser origin allowlist (ALLOWED_ORIGINS). Entries are `scheme://host[:port]`, or
 * `scheme://*.domain` for any subdomain of domain. An empty list allows every origin; a request without an
 * Origin header (not a browser) is always allowed — the allowlist stops other sites' pages, not clients.
 */
export class OriginPolicy {
  private readonly exact = new Set<string>();
  private readonly suffixes: { scheme: string; suffix: string; port: string }[] = [];

  constructor(allowed: readonly string[]) {
    for (const o of allowed) {
      const [, scheme, suffix, port = ""] = /^(https?):\/\/\*(\.[^:]+)(:\d+)?$/i.exec(o) ?? [];
      if (scheme !== undefined && suffix !== undefined) this.suffixes.push({ scheme: scheme.toLowerCase(), suffix: suffix.toLowerCase(), port });
      else this.exact.add(o.toLowerCase());
    }
  }

  get open(): boolean {
    return this.exact.size === 0 && this.suffixes.length === 0;
  }

  allows(origin: string): boolean {
    if (this.open || origin === "") return true;
    const o = origin.toLowerCase();
    if (this.exact.has(o)) return true;
    const [, scheme, host, port = ""] = /^(https?):\/\/([^/:]+)(:\d+)?$/.exec(o) ?? [];
    if (scheme === undefined || host === undefined) return false;
    return this.suffixes.some((s) => s.scheme === scheme && port === s.port && host.endsWith(s.suffix) && host.length > s.suffix.length);
  }
}

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
      const m = /^(https?):\/\/\*(\.[^:]+)(:\d+)?$/i.exec(o);
      if (m) this.suffixes.push({ scheme: m[1]!.toLowerCase(), suffix: m[2]!.toLowerCase(), port: m[3] ?? "" });
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
    const m = /^(https?):\/\/([^/:]+)(:\d+)?$/.exec(o);
    if (!m) return false;
    return this.suffixes.some((s) => s.scheme === m[1] && (m[3] ?? "") === s.port && m[2]!.endsWith(s.suffix) && m[2]!.length > s.suffix.length);
  }
}

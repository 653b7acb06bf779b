// The one reader of a gateway's Prometheus metrics for tests: a sample by its name and labels.

/** Label values a sample must have (it may have more). */
export type Labels = Record<string, string>;

/** One scrape of `/metrics`: read as many samples of it as needed. */
export class Scrape {
  constructor(readonly text: string) {}

  /**
   * The value of the first sample of `name` that has every label of `labels`. A family the gateway declares
   * (its `# TYPE` line is there) without such a sample yet is 0, as a counter child not yet made; a name the
   * scrape does not declare at all is NaN, so that a misspelt name cannot pass for a zero.
   */
  value(name: string, labels: Labels = {}): number {
    const want = Object.entries(labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
    for (const line of this.text.split("\n")) {
      if (!line.startsWith(name)) continue;
      const rest = line.slice(name.length);
      if (!rest.startsWith(" ") && !rest.startsWith("{")) continue;
      const labelPart = rest.startsWith("{") ? rest.slice(1, rest.indexOf("}")) : "";
      if (want.every((w) => labelPart.split(",").includes(w))) return Number(line.slice(line.lastIndexOf(" ") + 1));
    }
    return new RegExp(`^# TYPE ${name} `, "m").test(this.text) ? 0 : NaN;
  }
}

/** Scrapes `${baseUrl}/metrics` (the gateway's `metricsUrl`, or `url` without an admin listener). */
export async function scrape(baseUrl: string): Promise<Scrape> {
  const r = await fetch(`${baseUrl}/metrics`);
  if (r.status !== 200) throw new Error(`GET ${baseUrl}/metrics answered ${r.status}`);
  return new Scrape(await r.text());
}

/** One sample's value (see `Scrape.value`). */
export async function metric(baseUrl: string, name: string, labels?: Labels): Promise<number> {
  return (await scrape(baseUrl)).value(name, labels);
}

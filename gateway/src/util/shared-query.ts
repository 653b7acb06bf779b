/**
 * Coalesces concurrent calls of an async query into few requests while keeping them fresh: a caller gets
 * the result of a request *sent after it called* — the one queued behind the request in flight, shared by
 * everyone who arrived meanwhile. A storm of N callers costs at most two requests at a time, not N.
 */
export class SharedQuery<T> {
  private inflight?: Promise<T>;
  private queued?: Promise<T>;

  constructor(private readonly query: () => Promise<T>) {}

  get(): Promise<T> {
    if (this.queued) return this.queued;
    if (!this.inflight) return this.launch();
    const q = this.inflight
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.launch();
      });
    this.queued = q;
    return q;
  }

  private launch(): Promise<T> {
    const p: Promise<T> = this.query().finally(() => {
      if (this.inflight === p) this.inflight = undefined;
    });
    this.inflight = p;
    return p;
  }
}

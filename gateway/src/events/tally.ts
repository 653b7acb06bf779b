/**
 * One worker's count of what it holds (shared-keys.ts: channels with a subscriber, identified users with a
 * presence member), reporting only the 0↔1 transitions of each key (to its primary, over IPC): the
 * subscribe and unsubscribe paths call it, never the message path.
 */
export class ShareTally {
  private readonly counts = new Map<string, number>();

  constructor(private readonly report: (key: string, held: boolean) => void) {}

  add(key: string): void {
    const n = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, n);
    if (n === 1) this.report(key, true);
  }

  remove(key: string): void {
    const n = this.counts.get(key);
    if (n === undefined) return;
    if (n > 1) return void this.counts.set(key, n - 1);
    this.counts.delete(key);
    this.report(key, false);
  }
}

/**
 * How many times this worker has handed frames to sockets: topic publishes (one per message and codec, not
 * per socket) and per-socket sends. The backpressure sweep (ws/backpressure.ts) walks every socket only when
 * this moved since its last walk, or when that walk found a socket paused or with bytes still buffered: a
 * worker holding 18,000 idle sockets then does no per-socket work ten times a second.
 */
export class SendActivity {
  private n = 0;

  note(): void {
    this.n++;
  }

  get count(): number {
    return this.n;
  }
}

/** The process's one counter: a process is one worker, and every door's monitor reads the same sends. */
export const sendActivity = new SendActivity();

/**
 * How many times this worker has handed messages to sockets: topic publishes (one per message and codec, not
 * per socket) and the fan-out core's per-socket sends (catch-ups, deltas, late repairs, durables). Replies to
 * a socket's own frames (acks, errors) are not counted: they are bounded by what the socket asks, and while
 * thousands of sockets connect and subscribe they would wake the sweep for nothing. The backpressure sweep
 * (ws/backpressure.ts) walks every socket only when this moved since its last walk, or when that walk found a
 * socket paused or with bytes still buffered: a worker holding 18,000 idle sockets then does no per-socket
 * work ten times a second.
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

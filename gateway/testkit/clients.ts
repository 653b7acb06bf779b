// The clients a test file opens, closed together in afterAll, and the unique channel names its tests use.
import { TestClient } from "./ws-client.js";

/**
 * Remembers the TestClients a test file opens so that afterAll can close them all.
 *
 * `url` is read at each open(), not when the pool is made, so it can name a gateway that beforeAll starts later:
 * `const clients = new ClientPool(() => gw.wsUrl)`. open() takes TestClient.connect's options and, for files
 * that talk to several gateways, another `url`; clients opened some other way (auth.ts connect, a
 * reconnect) are handed to track().
 */
export class ClientPool {
  private readonly all: TestClient[] = [];
  constructor(private readonly url?: () => string) {}

  /** Connects a TestClient (to `o.url`, else the pool's URL) and remembers it. */
  async open(o: { url?: string; protocols?: string[]; headers?: Record<string, string>; msgpack?: boolean } = {}): Promise<TestClient> {
    const url = o.url ?? this.url?.();
    if (url === undefined) throw new Error("ClientPool.open: no url (give one to the pool or to open)");
    return this.track(await TestClient.connect(url, { protocols: o.protocols, headers: o.headers, msgpack: o.msgpack }));
  }

  /** Remembers a client opened elsewhere; returns it. */
  track<T extends TestClient>(c: T): T {
    this.all.push(c);
    return c;
  }

  /** Closes every remembered client (for afterAll). */
  closeAll(): void {
    for (const c of this.all) c.close();
  }
}

/** Returns `uniq(base)`: `base` followed by a counter that grows at each call, then `suffix` (e.g. `x${process.pid}`). */
export function uniqueNames(suffix = ""): (base: string) => string {
  let n = 0;
  return (base) => `${base}${++n}${suffix}`;
}

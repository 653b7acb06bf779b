// Clock offsets for runs over several hosts. Latency is the subscriber's receive time minus the publisher's
// send time, read on two clocks; it is only true when the clocks agree. Every load host estimates its offset
// to one reference, the server (the gateway's `pong` carries its time; Redis has TIME), NTP-style:
//
//   offset = serverTime − (sent + received) / 2, taken from the exchange with the smallest round trip,
//
// whose error is at most half that round trip. The publisher writes its offset into every payload ("o"), so
// a subscriber on another host corrects each latency by (its offset − the publisher's); on one host the two
// clocks are the same clock and nothing is corrected.
import { LeanSocket } from "../lean/connection.js";

/** One exchange: our send and receive times and the server's time in between (µs since the epoch). */
export type ClockSample = { sentUs: number; serverUs: number; recvUs: number };

/** A host's clock against the reference: add offsetUs to a local time to get the reference's. */
export type ClockEstimate = {
  /** What was asked, e.g. "gateway 10.0.0.5:9000 pong". */
  reference: string;
  offsetUs: number;
  /** Round trip of the exchange used; the offset is good to ± half of it. */
  rttUs: number;
  samples: number;
  measuredAt: string;
};

/** The offset from the sample with the smallest round trip (its error bound is the smallest). */
export function estimateOffset(samples: readonly ClockSample[]): { offsetUs: number; rttUs: number } {
  if (samples.length === 0) throw new Error("no clock samples");
  let best = samples[0]!;
  for (const s of samples) if (s.recvUs - s.sentUs < best.recvUs - best.sentUs) best = s;
  return { offsetUs: best.serverUs - (best.sentUs + best.recvUs) / 2, rttUs: best.recvUs - best.sentUs };
}

/** Hostnames as they appear in publisher ids (pub-cluster's safePublisherId). */
export function safeHostId(h: string): string {
  return h.replace(/[^A-Za-z0-9._:@-]/g, "_");
}

/** The host part of a pub-cluster publisher id `<host>-<pid>-<process>:<channel>`. */
export function publisherHost(id: string): string {
  const colon = id.indexOf(":");
  const head = colon >= 0 ? id.slice(0, colon) : id;
  const a = head.lastIndexOf("-");
  const b = a > 0 ? head.lastIndexOf("-", a - 1) : -1;
  return b > 0 ? head.slice(0, b) : head;
}

const now = (): number => performance.timeOrigin * 1000 + performance.now() * 1000;

/**
 * Asks a gateway for its time `n` times over one WebSocket (`{"op":"ping"}` → `{"op":"pong","time":ms}`).
 * Resolves null, with the reason, when the gateway's pong carries no time or it cannot be reached.
 */
export function measureGatewayClock(host: string, port: number, path: string, n = 16, timeoutMs = 5_000): Promise<ClockEstimate | string> {
  return new Promise((resolve) => {
    const samples: ClockSample[] = [];
    let sentUs = 0;
    let done = false;
    const finish = (r: ClockEstimate | string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.close();
      resolve(r);
    };
    const timer = setTimeout(() => finish(`no answer from ${host}:${port} within ${timeoutMs} ms`), timeoutMs);
    const ping = (): void => {
      sentUs = now();
      sock.send(`{"op":"ping","id":${samples.length + 1}}`);
    };
    const sock = new LeanSocket(
      { host, port, path, timeoutMs },
      {
        open: ping,
        message(_op, buf, s, e) {
          const recvUs = now();
          const text = buf.toString("utf8", s, e);
          if (!text.startsWith('{"op":"pong"')) return;
          const m = /"time":(-?[\d.]+)/.exec(text);
          if (!m) {
            finish("the gateway's pong carries no time (a gateway older than this tool)");
            return;
          }
          samples.push({ sentUs, serverUs: Number(m[1]) * 1000, recvUs });
          if (samples.length < n) ping();
          else finish({ reference: `gateway ${host}:${port} pong`, ...estimateOffset(samples), samples: samples.length, measuredAt: new Date().toISOString() });
        },
        closed(info) {
          finish(`clock exchange with ${host}:${port} failed: ${info.reason}${info.error ? ` (${info.error.message})` : ""}`);
        },
      },
    );
  });
}

/** Asks Redis for its time (TIME: seconds and µs) `n` times. */
export async function measureRedisClock(host: string, port: number, n = 16, timeoutMs = 5_000): Promise<ClockEstimate | string> {
  const { Redis } = await import("ioredis");
  const r = new Redis({ host, port, lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: timeoutMs, retryStrategy: () => null });
  r.on("error", () => undefined);
  try {
    await r.connect();
    const samples: ClockSample[] = [];
    for (let i = 0; i < n; i++) {
      const sentUs = now();
      const [sec, usec] = await r.time();
      samples.push({ sentUs, serverUs: Number(sec) * 1e6 + Number(usec), recvUs: now() });
    }
    return { reference: `redis ${host}:${port} TIME`, ...estimateOffset(samples), samples: n, measuredAt: new Date().toISOString() };
  } catch (e) {
    return `clock exchange with redis ${host}:${port} failed: ${(e as Error).message}`;
  } finally {
    r.disconnect();
  }
}

/** µs with a sign, for reports: "+1,234 µs". */
export function fmtOffset(us: number): string {
  return `${us >= 0 ? "+" : "−"}${Math.round(Math.abs(us)).toLocaleString("en-US")} µs`;
}

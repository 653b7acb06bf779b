// Stream set-up at start retried while JetStream elects leaders (a gateway started during a NATS node's
// restart exited on the first timeout: found by the chaos run, seed 20261125), and not retried when final.
import { describe, expect, it } from "vitest";
import { JetStreamApiError } from "@nats-io/jetstream";
import { PermissionViolationError, RequestError } from "@nats-io/transport-node";
import { whileElecting } from "../../src/broker/jetstream/stream.js";
import { ProcessError } from "../../src/errors.js";
import { createLogger } from "../../src/log.js";

const log = createLogger("silent", {});

function failing(errors: unknown[]): { step: () => Promise<string>; calls: () => number } {
  let n = 0;
  return {
    step: async () => {
      const e = errors[n++];
      if (e) throw e;
      return "done";
    },
    calls: () => n,
  };
}

describe("stream set-up — while JetStream elects leaders", () => {
  it("while electing — timeouts and 5xx answers are tried again until the step succeeds", async () => {
    const timeout = Object.assign(new Error("timeout"), { name: "TimeoutError" });
    const noLeader = new JetStreamApiError({ code: 503, err_code: 10008, description: "JetStream system temporarily unavailable" });
    const f = failing([timeout, noLeader, timeout]);
    await expect(whileElecting("stream X", log, f.step, 8, 1)).resolves.toBe("done");
    expect(f.calls()).toBe(4);
  });

  it("while electing — no suitable peers for placement (10005, a 400) is tried again: a replicated stream waits for a restarting node", async () => {
    // A new R3 stream (a namespace added) while a node restarts, or on a cluster that has just formed.
    const noPeers = new JetStreamApiError({ code: 400, err_code: 10005, description: "no suitable peers for placement, peer offline" });
    const f = failing([noPeers, noPeers]);
    await expect(whileElecting("stream X", log, f.step, 8, 1)).resolves.toBe("done");
    expect(f.calls()).toBe(3);
  });

  it("while electing — a refusal (4xx) or a config mismatch is final; attempts are bounded", async () => {
    const refused = new JetStreamApiError({ code: 400, err_code: 10058, description: "stream name already in use with a different configuration" });
    const a = failing([refused, undefined]);
    await expect(whileElecting("stream X", log, a.step, 8, 1)).rejects.toBe(refused);
    expect(a.calls()).toBe(1);
    const mismatch = new ProcessError("ERR_STREAM_MISMATCH", "differs");
    const b = failing([mismatch]);
    await expect(whileElecting("stream X", log, b.step, 8, 1)).rejects.toBe(mismatch);
    expect(b.calls()).toBe(1);
    const timeout = new Error("timeout");
    const c = failing([timeout, timeout, timeout, timeout]);
    await expect(whileElecting("stream X", log, c.step, 3, 1)).rejects.toBe(timeout);
    expect(c.calls()).toBe(3);
  });

  it("while electing — a permissions violation is final: a user lacking $JS.API.STREAM.INFO exits at once, not after 8 tries (about 22 s)", async () => {
    const denied = new RequestError('Permissions Violation for Publish to "$JS.API.STREAM.INFO.X"', {
      cause: new PermissionViolationError('Permissions Violation for Publish to "$JS.API.STREAM.INFO.X"', "publish", "$JS.API.STREAM.INFO.X"),
    });
    const f = failing([denied, undefined]);
    await expect(whileElecting("stream X", log, f.step, 8, 1)).rejects.toBe(denied);
    expect(f.calls()).toBe(1);
    // Any other failed request (no responders while a leader is elected) is still tried again.
    const noResponders = new RequestError("no responders");
    const g = failing([noResponders]);
    await expect(whileElecting("stream X", log, g.step, 8, 1)).resolves.toBe("done");
    expect(g.calls()).toBe(2);
  });
});

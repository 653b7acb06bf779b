import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";

// Encryption at rest of the embedded nats-server's store (NATS_STORE_KEY_FILE, NATS_STORE_CIPHER).
const root = mkdtempSync(join(tmpdir(), "fgw-enc-"));
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  rmSync(root, { recursive: true, force: true });
});

const keyFile = (name: string, key: string) => {
  const f = join(root, name);
  writeFileSync(f, `${key}\n`, { mode: 0o600 });
  return f;
};
const gateway = async (dataDir: string, args: string[] = []): Promise<GatewayHandle> => {
  const g = await startGateway({ workers: 1, logLevel: "info", args: ["--nats-data-dir", dataDir, ...args] });
  cleanups.push(() => g.stop("SIGKILL"));
  return g;
};
/** The files of a store, read whole (a few hundred kB here). */
const storeFiles = (dir: string): Buffer[] => {
  const out: Buffer[] = [];
  for (const e of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    const p = join(dir, e);
    if (statSync(p).isFile()) out.push(readFileSync(p));
  }
  return out;
};
const holds = (dir: string, marker: string) => storeFiles(dir).some((b) => b.includes(marker));
/** Runs the CLI until it exits (a start that must fail); resolves with its code and output. */
const runToExit = (args: string[]): Promise<{ code: number | null; out: string }> =>
  new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, "--port", "0", "--workers", "1", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const t = setTimeout(() => p.kill("SIGKILL"), 30_000);
    p.once("exit", (code) => {
      clearTimeout(t);
      resolve({ code, out });
    });
  });
const publishMarker = async (g: GatewayHandle, marker: string) => {
  expect((await httpPublish(g.url, "enc.check", { marker })).status).toBe(201);
};
const history = async (g: GatewayHandle): Promise<unknown[]> => {
  const c = await TestClient.connect(g.wsUrl);
  try {
    await c.sub("enc.check", { from: "all" });
    return (await c.waitForMsgs(1)).map((m) => m.data);
  } finally {
    c.close();
  }
};

describe("store encryption — embedded nats-server", () => {
  it("store encryption — without a key the message bytes are in the store files in plain text (the control)", async () => {
    const dir = join(root, "plain");
    const g = await gateway(dir);
    const marker = `plain-marker-${process.pid}-${Date.now()}`;
    await publishMarker(g, marker);
    expect(await g.stop()).toBe(0);
    expect(holds(dir, marker)).toBe(true);
  });

  for (const cipher of ["chachapoly", "aes"] as const) {
    it(`store encryption — ${cipher}: the message bytes are nowhere in the store files; a restart with the same key reads the history back`, async () => {
      const dir = join(root, `enc-${cipher}`);
      const key = keyFile(`${cipher}.key`, `k3y-${cipher}-0123456789-"quoted"-\\-#not-a-comment`);
      const g = await gateway(dir, ["--nats-store-key-file", key, "--nats-store-cipher", cipher]);
      const ready = g.logs.find((l) => l.msg === "embedded nats-server ready")!;
      expect(ready).toMatchObject({ encryption: cipher });
      // The key is on no command line (nats-server's, or the gateway's).
      for (const pid of [ready.natsPid as number, g.process.pid!]) expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).not.toContain("0123456789");
      const marker = `secret-marker-${cipher}-${process.pid}-${Date.now()}`;
      await publishMarker(g, marker);
      expect(await history(g)).toEqual([{ marker }]);
      expect(await g.stop()).toBe(0);
      expect(storeFiles(dir).length).toBeGreaterThan(0);
      expect(holds(dir, marker)).toBe(false);
      expect(holds(dir, "enc.check")).toBe(false); // the subject too

      const again = await gateway(dir, ["--nats-store-key-file", key, "--nats-store-cipher", cipher]);
      expect(await history(again)).toEqual([{ marker }]);
      expect(await again.stop()).toBe(0);
    });
  }

  it("store encryption — a wrong key, or none, on an encrypted store exits 1 naming NATS_STORE_KEY_FILE, and leaves the store as it was (creating the stream again would have replaced it)", async () => {
    const dir = join(root, "wrong");
    const key = keyFile("right.key", "the-right-key-0123456789");
    const g = await gateway(dir, ["--nats-store-key-file", key]);
    const marker = `kept-${process.pid}-${Date.now()}`;
    await publishMarker(g, marker);
    expect(await g.stop()).toBe(0);
    const before = storeFiles(dir).reduce((n, b) => n + b.length, 0);

    const wrong = await runToExit(["--nats-data-dir", dir, "--nats-store-key-file", keyFile("wrong.key", "not-the-right-key-0123456789")]);
    expect(wrong.code).toBe(1);
    expect(wrong.out).toContain("invalid NATS_STORE_KEY_FILE (--nats-store-key-file)");
    expect(wrong.out).toContain("FANOUT_CHANNELS");
    const none = await runToExit(["--nats-data-dir", dir]);
    expect(none.code).toBe(1);
    expect(none.out).toContain("NATS_STORE_KEY_FILE");
    expect(storeFiles(dir).reduce((n, b) => n + b.length, 0)).toBeGreaterThanOrEqual(before);

    const back = await gateway(dir, ["--nats-store-key-file", key]);
    expect(await history(back)).toEqual([{ marker }]);
    expect(await back.stop()).toBe(0);
  });

  it("store encryption — a missing key file, or a key file with the NATS_URL of an external server, exits 1 naming the setting", async () => {
    const missing = await runToExit(["--nats-data-dir", join(root, "missing"), "--nats-store-key-file", join(root, "no-such.key")]);
    expect(missing.code).toBe(1);
    expect(missing.out).toContain("invalid NATS_STORE_KEY_FILE (--nats-store-key-file)");
    const short = await runToExit(["--nats-data-dir", join(root, "short"), "--nats-store-key-file", keyFile("short.key", "short")]);
    expect(short.code).toBe(1);
    expect(short.out).toContain("invalid NATS_STORE_KEY_FILE (--nats-store-key-file)");
    const external = await runToExit(["--nats-url", "nats://127.0.0.1:1", "--nats-store-key-file", keyFile("ext.key", "some-key-0123456789abc")]);
    expect(external.code).toBe(1);
    expect(external.out).toContain("invalid NATS_STORE_KEY_FILE (--nats-store-key-file): has no effect with NATS_URL");
    const cipher = await runToExit(["--nats-store-cipher", "rot13"]);
    expect(cipher.code).toBe(1);
    expect(cipher.out).toContain("invalid NATS_STORE_CIPHER (--nats-store-cipher)");
  });
});

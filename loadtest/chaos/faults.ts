// Injecting one fault of the schedule and waiting until the system is whole again (every instance ready,
// every NATS node up). Each wait is bounded; a fault that cannot recover in time fails the run.
import type { JetStreamManager } from "@nats-io/jetstream";
import type { ChildProcess } from "node:child_process";
import { waitFor } from "#testkit/wait.js";
import type { NatsClusterNode } from "#testkit/nats-cluster.js";
import { REGION_NAMES, type RegionNode } from "#testkit/nats-supercluster.js";
import type { Fault } from "./schedule.js";
import { STREAM, type Topology } from "./topology.js";
import type { ToClients } from "./clients.js";

/** A part of a fault that acts on one target for part of its time (each instance's step of a rolling restart). */
export type FaultStep = { target: string; startedAt: number; endedAt: number };
export type FaultRecord = Fault & { index: number; startedAt: number; endedAt: number; target: string; steps?: FaultStep[] };

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Restarts on the same ports can find one taken meanwhile: the ports were picked in the ephemeral range, so
 * any outgoing connection on this shared machine may get one as its local port. Retried, bounded.
 */
export async function retryInUse<T>(start: () => Promise<T>, attempts = 10): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await start();
    } catch (e) {
      if (i >= attempts || !/address already in use|EADDRINUSE|listen/i.test(String(e))) throw e;
      await delay(2_000);
    }
  }
}

export type FaultContext = {
  topo: Topology;
  jsm: JetStreamManager;
  clients: ChildProcess[];
  seed: number;
  /**
   * Takes the first free of named locks (lanes.ts) for one step of a fault that acts on one thing at a time,
   * in any order (a rolling restart); without it, steps go in the order given.
   */
  lockAny?: (names: string[]) => Promise<{ name: string; release: () => void }>;
};

/** The node a nats fault hits: the stream's leader, or a node that is not (by the fault's own draw). */
async function natsNode(ctx: FaultContext, f: Fault): Promise<NatsClusterNode> {
  const info = await waitFor(() => ctx.jsm.streams.info(STREAM), { timeoutMs: 15_000, what: "stream info" });
  const leader = info.cluster?.leader;
  const nodes = ctx.topo.cluster?.nodes;
  if (!nodes) throw new Error(`${f.kind} needs the NATS cluster (not a --regions run)`);
  if (f.natsTarget === "leader") return nodes.find((n) => n.name === leader) ?? nodes[0]!;
  const others = nodes.filter((n) => n.name !== leader);
  return others[f.worker % others.length]!;
}

/** The region a region fault hits: the fault's instance's (a, b, c). */
function regionNode(ctx: FaultContext, f: Fault): RegionNode {
  const sc = ctx.topo.regions;
  if (!sc) throw new Error(`${f.kind} needs --regions`);
  return sc.regions[REGION_NAMES[f.instance % REGION_NAMES.length]!];
}

/**
 * What must be ready again before a fault counts as over: the instance it hit. A NATS node's fault waits for
 * the stream instead (streamWhole); the clients' faults and a rolling restart (it waited for each instance)
 * for nothing more. Waiting only for its own target keeps overlapping lanes (lanes.ts) from waiting on
 * one another's recoveries.
 */
function recoveredWhen(ctx: FaultContext, f: Fault): Topology["instances"] {
  switch (f.kind) {
    case "worker-kill":
    case "primary-kill":
    case "link-stall":
    case "link-delay":
      return [ctx.topo.instances[f.instance]!];
    case "rolling-restart":
    case "client-burst":
    case "client-stall":
      return [];
    case "nats-kill":
    case "nats-pause":
    case "region-cut":
    case "region-delay":
    case "region-move":
    case "region-split":
      return [];
    case "region-kill":
      return [ctx.topo.instances[f.instance]!];
  }
}

/** After a NATS node's fault: the stream has a leader again and the node is a current replica of it. */
async function streamWhole(ctx: FaultContext, node: NatsClusterNode): Promise<void> {
  await waitFor(
    async () => {
      const c = (await ctx.jsm.streams.info(STREAM)).cluster;
      if (!c?.leader) return false;
      return c.leader === node.name || (c.replicas ?? []).some((r) => r.name === node.name && r.current);
    },
    { timeoutMs: 60_000, intervalMs: 200, what: `stream whole again with ${node.name}` },
  );
}

export async function inject(ctx: FaultContext, f: Fault, index: number): Promise<FaultRecord> {
  const startedAt = Date.now();
  const inst = ctx.topo.instances[f.instance]!;
  let target = `gw${f.instance}`;
  let steps: FaultStep[] | undefined;
  const toClients = (m: ToClients) => ctx.clients.forEach((c) => c.connected && c.send(m));
  switch (f.kind) {
    case "worker-kill": {
      const pids = await inst.workerPids();
      const pid = pids[f.worker % pids.length]!;
      target = `gw${f.instance} worker ${pid}`;
      process.kill(pid, "SIGKILL");
      // The primary forks a replacement (with backoff).
      await waitFor(
        async () => {
          const now = await inst.workerPids();
          now.forEach((p) => inst.pids.add(p));
          return now.length === 2 && !now.includes(pid);
        },
        { timeoutMs: 20_000, intervalMs: 100, what: `gw${f.instance} to replace worker ${pid}` },
      );
      break;
    }
    case "primary-kill":
      await inst.killPrimary();
      await inst.start();
      break;
    case "rolling-restart":
      // One instance at a time, as a deploy does: the others stay in service and may meanwhile take
      // faults of their own (each step holds only its instance's lock). Each instance once, whichever is
      // free first (a deploy does not care about the order), so that a restart does not queue behind another
      // fault's hold on one instance while the others are idle. Each step is recorded, so that what a client
      // saw can be tied to the instance being restarted then rather than to the whole deploy.
      const left = ctx.topo.instances.map((_, n) => `gw${n}`);
      target = left.join(",");
      steps = [];
      while (left.length > 0) {
        const { name, release } = ctx.lockAny ? await ctx.lockAny(left) : { name: left[0]!, release: () => undefined };
        left.splice(left.indexOf(name), 1);
        const i = ctx.topo.instances[Number(name.slice(2))]!;
        const stepAt = Date.now();
        try {
          await i.stopGraceful();
          await i.start();
          await i.ready(30_000);
        } finally {
          release();
          steps.push({ target: name, startedAt: stepAt, endedAt: Date.now() });
        }
      }
      break;
    case "nats-kill": {
      const node = await natsNode(ctx, f);
      target = `${node.name} (${f.natsTarget})`;
      await node.kill();
      await delay(f.holdMs);
      await retryInUse(() => node.restart());
      await streamWhole(ctx, node);
      break;
    }
    case "nats-pause": {
      const node = await natsNode(ctx, f);
      target = `${node.name} (${f.natsTarget})`;
      node.process.kill("SIGSTOP");
      try {
        await delay(f.holdMs);
      } finally {
        node.process.kill("SIGCONT");
      }
      await streamWhole(ctx, node);
      break;
    }
    case "link-stall":
      target = `gw${f.instance} <-> every NATS node`;
      inst.links.forEach((l) => l.stall(true));
      try {
        await delay(f.holdMs);
      } finally {
        inst.links.forEach((l) => l.stall(false));
      }
      break;
    case "link-delay":
      target = `gw${f.instance} <-> every NATS node, +${f.delayMs} ms each way`;
      inst.links.forEach((l) => l.delay(f.delayMs));
      try {
        await delay(f.holdMs);
      } finally {
        inst.links.forEach((l) => l.delay(0));
      }
      break;
    case "region-kill": {
      const node = regionNode(ctx, f);
      target = `region ${node.region}'s NATS node`;
      await node.kill();
      await delay(f.holdMs);
      await retryInUse(() => node.restart());
      break;
    }
    case "region-cut": {
      const node = regionNode(ctx, f);
      target = `the gateway links into region ${node.region}`;
      node.links.refuse(true);
      try {
        await delay(f.holdMs);
      } finally {
        node.links.refuse(false);
      }
      await ctx.topo.regions!.waitJoined(60_000);
      break;
    }
    case "region-delay": {
      const node = regionNode(ctx, f);
      target = `the gateway links into region ${node.region}, +${f.delayMs} ms each way`;
      node.links.delay(f.delayMs);
      try {
        await delay(f.holdMs);
      } finally {
        node.links.delay(0);
      }
      break;
    }
    case "region-split": {
      // The fault's region and the next one lose the link between them; each keeps its link with the third.
      const sc = ctx.topo.regions;
      if (!sc) throw new Error(`${f.kind} needs --regions`);
      const [x, y] = [REGION_NAMES[f.instance % 3]!, REGION_NAMES[(f.instance + 1) % 3]!];
      target = `the link between regions ${x} and ${y}`;
      sc.split(x, y, true);
      try {
        await delay(f.holdMs);
      } finally {
        sc.split(x, y, false);
      }
      await sc.waitJoined(60_000);
      break;
    }
    case "region-move":
      // A resuming subscriber's next connection goes to the next instance of its list: another region's gateway.
      target = "half of the subscribers, each to the next region's gateway";
      toClients({ type: "burst", fraction: 0.5, seed: ctx.seed + index });
      break;
    case "client-burst":
      target = "half of the subscribers";
      toClients({ type: "burst", fraction: 0.5, seed: ctx.seed + index });
      break;
    case "client-stall":
      target = "a third of the subscribers";
      toClients({ type: "stall", ms: f.holdMs, fraction: 0.34, seed: ctx.seed + index });
      await delay(f.holdMs);
      break;
  }
  // Another lane may be restarting that instance: its start may wait for a NATS leader (up to 90 s).
  await Promise.all(recoveredWhen(ctx, f).map((i) => i.ready(120_000)));
  return { ...f, index, target, startedAt, endedAt: Date.now(), ...(steps ? { steps } : {}) };
}

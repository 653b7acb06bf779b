// The gateway leg of seed 000's layout rows, as pure data: which rows it runs, the channels of the pods, the
// namespaces file that gives each app prefix its own stream, the streams a row leaves behind, and the
// subscribers' rates. gateway-leg.ts runs the processes.
import { MATRIX, podSubject, type MatrixSpec } from "./matrix.js";
import type { Rates } from "./rows.js";

/** Gateway workers in the leg (the users' pods went to a cluster of gateways; two workers is this box's). */
export const GATEWAY_WORKERS = 2;

/** The users' layout pairs: one stream for all vs one per app prefix, 10 KB, R3, sync, with 3 and 6 pods. */
export const LAYOUT_PAIRS: ReadonlyArray<{ pods: number; one: string; app: string }> = [
  { pods: 3, one: "000.one-10k-r3-sync-3", app: "000.app-10k-r3-sync-3" },
  { pods: 6, one: "000.one-10k-r3-sync-6", app: "000.app-10k-r3-sync-6" },
];

/**
 * The matrix rows the leg runs in round `round` (1-based; --quick divides their pods: 1 and 2): pair by pair,
 * one stream first in odd rounds and a stream per app first in even ones, so whatever drifts over a run
 * (the servers' stores filling, other work on the box) does not always favour the same layout.
 */
export function layoutRows(round: number): MatrixSpec[] {
  const byName = new Map(MATRIX.map((s) => [s.workload, s]));
  return LAYOUT_PAIRS.flatMap((p) => (round % 2 ? [p.one, p.app] : [p.app, p.one])).map((w) => byName.get(w)!);
}

/**
 * The channel pod `p` publishes and subscribes on: the users' subject without the one-stream layout's
 * `default.` (app1.bench1.subj.v1, app2.bench2.subj.v1, …). Both layouts use the same channels; only where
 * the gateway stores them differs.
 */
export const podChannel = (p: number): string => podSubject("app", p);

/** The app prefix (and namespace name) of pod `p`: app1, app2, … */
export const podApp = (p: number): string => podChannel(p).split(".")[0]!;

/** What one row's gateway is started with: its default stream, subject prefix and, for layout "app", namespaces. */
export type RowStreams = {
  /** The default stream (--stream-name): every channel in layout "one", none in layout "app". */
  stream: string;
  /** --subject-prefix, unique per row so no stream of an earlier row can hold its subjects. */
  subjectPrefix: string;
  /** The namespaces file's content (JSON), or null for layout "one". */
  namespaces: NamespacesDoc | null;
  /** Every stream the row's gateway creates, to remove after the row. */
  all: string[];
};

export type NamespacesDoc = {
  namespaces: Record<string, { prefix: string; stream: string; storage: "file" | "memory"; replicas: number }>;
};

/** The streams of row number `n` (unique within a run) with `pods` pods. */
export function rowStreams(layout: "one" | "app", pods: number, n: number, storage: "file" | "memory", replicas: number): RowStreams {
  const stream = `GWL${n}`;
  const subjectPrefix = `gwl${n}`;
  if (layout === "one") return { stream, subjectPrefix, namespaces: null, all: [stream] };
  const namespaces: NamespacesDoc["namespaces"] = {};
  for (let p = 0; p < pods; p++) {
    const app = podApp(p);
    namespaces[app] = { prefix: app, stream: `${stream}_${app.toUpperCase()}`, storage, replicas };
  }
  return { stream, subjectPrefix, namespaces: { namespaces }, all: [stream, ...Object.values(namespaces).map((x) => x.stream)] };
}

/**
 * The messages each stream of a row must hold once every pod has published `perPod` (end markers included):
 * all of them in the default stream for layout "one"; for layout "app" each pod's in its app's stream and
 * none in the default stream.
 */
export function expectedStreamMessages(rs: RowStreams, pods: number, perPod: number): Map<string, number> {
  if (!rs.namespaces) return new Map([[rs.stream, pods * perPod]]);
  return new Map([[rs.stream, 0], ...Object.values(rs.namespaces.namespaces).map((n): [string, number] => [n.stream, perPod])]);
}

/** Where the streams' message counts differ from the expected ones (empty when they agree). */
export function streamMismatches(expected: ReadonlyMap<string, number>, actual: ReadonlyMap<string, number | undefined>): string[] {
  return [...expected].flatMap(([name, n]) => {
    const got = actual.get(name);
    return got === n ? [] : [`stream ${name} holds ${got === undefined ? "nothing (missing)" : got} messages, not ${n}`];
  });
}

/** One pod's subscribers: how many, what they received, and the time from their first message to their last. */
export type PodDeliveries = { clients: number; received: number; windowMs: number };

/**
 * Subscriber rates over the pods: per subscriber (min/avg/max over pods, each pod's deliveries spread evenly
 * over its subscribers) and, as the aggregate, every delivery of every pod per second.
 */
export function deliveryRates(pods: readonly PodDeliveries[]): Rates {
  const each = pods.map((p) => p.received / p.clients / (p.windowMs / 1000));
  const clients = pods.reduce((a, p) => a + p.clients, 0);
  return {
    clients,
    min: Math.min(...each),
    avg: pods.reduce((a, p, i) => a + each[i]! * p.clients, 0) / clients,
    max: Math.max(...each),
    aggregate: pods.reduce((a, p) => a + p.received / (p.windowMs / 1000), 0),
  };
}

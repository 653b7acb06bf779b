import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import client from "prom-client";
import { BackendCaller } from "../backend/caller.js";
import { backendMetrics } from "../backend/metrics.js";
import type { EventsBroker } from "../broker/events.js";
import type { Sections } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import { LeaderLease } from "../services/leader-lease.js";
import { Services } from "../services/services.js";
import { Announcer } from "./announcer.js";
import { webhookMetrics } from "./metrics.js";
import { EventRecorder } from "./recorder.js";
import { InstanceShares } from "./shares.js";
import { SENDER_HEADER, WebhookSender, webhookSecrets } from "./webhook.js";
import { senderTimings } from "./webhook-timings.js";

export type EventsOptions = {
  sections: Pick<Sections, "events" | "namespaces" | "presence">;
  broker: EventsBroker;
  /** The primary's registry (the webhook's metrics and fanout_cluster_leader). */
  registry: client.Registry;
  log: Logger;
};

/** The events feature as the primary runs it: what the worker pool reports shares to, and one stop. */
export type EventsFeature = {
  /** This instance's share of the cluster's channels and users, when a cluster-wide kind is on: the workers report to it. */
  readonly shares?: InstanceShares;
  /** Stops the webhook sender (its batch out is waited for, up to 2 s), then the services (the lease released, the heartbeat removed). */
  stop(): Promise<void>;
};

/**
 * The events feature's one entry in the primary (EVENTS): the events stream, made before any worker
 * records in it; with EVENTS_WEBHOOK_URL, this instance's webhook sender; with a cluster-wide kind, the
 * services beside the workers. Undefined when EVENTS turns no kind on.
 */
export async function startEventsFeature(o: EventsOptions): Promise<EventsFeature | undefined> {
  const c = o.sections.events;
  if (c.kinds.length === 0) return undefined;
  await o.broker.ensureStream();
  const webhook = await startWebhook(o);
  const services = sharedKinds(c) ? await startServices(o) : undefined;
  return {
    ...(services ? { shares: services.shares } : {}),
    async stop() {
      await webhook?.stop();
      // The leader drops this instance's shares with its heartbeat (the workers' last reports are not waited for).
      await services?.services.stop();
    },
  };
}

/** Whether a cluster-wide kind is on (channel.occupied, channel.vacated, presence.join, presence.leave): then the services run. */
const sharedKinds = (c: Sections["events"]): boolean => c.kinds.some((k) => k.startsWith("channel.") || k.startsWith("presence."));

/** With EVENTS_WEBHOOK_URL, this instance's webhook sender: every instance runs one, and the durable consumer they share hands each event to one. */
async function startWebhook({ sections, broker, registry, log }: EventsOptions): Promise<WebhookSender | undefined> {
  const c = sections.events;
  const w = c.webhook;
  if (!w.url) return undefined;
  const secrets = w.secretFile ? webhookSecrets(readFileSync(w.secretFile, "utf8"), w.secretFile) : [];
  const timings = senderTimings(w);
  const source = await broker.webhookSource({ maxAckPending: w.batch * w.concurrency, ackWaitMs: timings.ackWaitMs });
  const holder = `${hostname()}/${process.pid}`;
  const lease = timings.ordered ? new LeaderLease(await broker.webhookLease(timings.leaseMs), holder, timings.holdMs) : undefined;
  const caller = new BackendCaller(
    // Only the status acknowledges a batch: the receiver's body is dropped unread, whatever its size.
    { timeoutMs: w.timeoutMs, maxInFlight: w.concurrency, maxAnswerBytes: 0, headers: { [SENDER_HEADER]: holder }, ...(secrets.length > 0 ? { secrets } : {}) },
    log,
    backendMetrics(registry, "webhook"),
  );
  const sending = () => sender.state().sending;
  const sender: WebhookSender = new WebhookSender(source, caller, w, timings, log, webhookMetrics(registry, source, sending), lease);
  sender.start();
  log.info({ url: w.url, kinds: c.kinds, signed: secrets.length, ordered: timings.ordered, takeoverMs: w.takeoverMs }, "events webhook sender started");
  return sender;
}

/**
 * The primary's services beside the workers (services/): this instance's share of the cluster's channels
 * and users (every instance), and the announcer of their transitions (the leader only). Started before
 * the workers: the heartbeat is written before any share.
 */
async function startServices({ sections, broker, registry, log }: EventsOptions): Promise<{ services: Services; shares: InstanceShares } | undefined> {
  const e = sections.events;
  const settings = { bucket: e.stateBucket, ttlMs: e.instanceTtlMs, replicas: e.replicas, storage: sections.presence.storage, homeRegion: e.homeRegion };
  // As presence: a server without per-message TTL (before 2.11) refuses the bucket, and the rest still works.
  const state = await broker.sharedState(settings).catch((err: unknown) => {
    log.error(
      { err, bucket: e.stateBucket },
      "the cluster's state bucket could not be created (nats-server 2.11+ is needed): no channel.occupied, channel.vacated, nor identified users' presence.join and presence.leave",
    );
    return undefined;
  });
  if (!state) return undefined;
  const instance = randomBytes(8).toString("hex");
  // Its own registry: the leader retries what failed (recordOnce), so it counts nothing in fanout_events_failed_total, the workers' metric.
  const recorder = new EventRecorder(e, (subject, json, msgId) => broker.appendEvent(subject, json, msgId), log, new client.Registry(), sections.namespaces);
  const shares = new InstanceShares(state, instance, log);
  // Renewed every third of the TTL: held while the last renewal is under 3/4 of it old (one renewal may fail),
  // so a leader cut off stops before the lease runs out for the others.
  const lease = new LeaderLease(state.leaderLease(), instance, Math.floor(e.instanceTtlMs * 0.75));
  const services = new Services(state, lease, instance, e.instanceTtlMs, [shares], [new Announcer(state, recorder, e.debounceMs, log)], log, registry);
  await services.start();
  log.info({ instance, bucket: e.stateBucket, debounceMs: e.debounceMs, leader: services.leader }, "cluster-wide events started");
  return { services, shares };
}

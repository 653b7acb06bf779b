import type { Broker, BrokerMessage } from "../src/broker/broker.js";
import type { Feed } from "../src/fanout/feed.js";
import { DeliveryRoutes } from "../src/fanout/routes.js";
import type { FanoutSocket } from "../src/fanout/socket.js";
import { feedTopic } from "../src/fanout/topics.js";
import type { MsgFrames } from "../src/protocol/codec.js";

/** A message's frames as one fixed frame for every codec (in-process tests deliver made-up bytes). */
export const fixedFrames = (frame: Uint8Array): MsgFrames => ({ frame: () => frame, size: frame.length });

/**
 * A hub feed for in-process tests: a fixed position and count, and the hub's own route table, whose receivers
 * the test reads (`routes.of("live")`) and drives (`deliver`).
 */
export class FakeFeed implements Feed {
  readonly topic: string;
  readonly routes = new DeliveryRoutes();
  constructor(
    readonly pattern: string,
    public pos = 0,
    public count = 0,
  ) {
    this.topic = feedTopic(pattern);
  }
  position(): number {
    return this.pos;
  }
  join(sock: FanoutSocket): void {
    sock.joinTopic(this.topic, false);
  }
  flush(): void {}
  /** A live message: what the hub does after publishing to the topic. */
  deliver(seq: number, frame: Buffer): void {
    if (seq > this.pos) this.pos = seq;
    this.count++;
    const msg = fixedFrames(frame);
    for (const l of this.routes.of("live")) l.onLive(seq, msg);
  }
}

/** A broker whose one live feed the test drives: `push` hands the hub a message (and moves the feed's position). */
export function fakeLiveBroker(): { broker: Broker; push: (m: BrokerMessage) => void } {
  let on: (m: BrokerMessage) => void = () => undefined;
  let pos = 0;
  const broker = {
    live: async (_p: string, deliver: (m: BrokerMessage) => void) => {
      on = deliver;
      return { position: () => pos, stop: async () => undefined };
    },
  } as unknown as Broker;
  return {
    broker,
    push: (m) => {
      pos = m.seq;
      on(m);
    },
  };
}

import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { PermissionViolationError, RequestError } from "@nats-io/transport-node";
import { FORMER_DEFAULT_STREAM_NAME } from "../../config/sections/stream.js";
import type { Logger } from "../../log.js";
import { whileElecting } from "./stream.js";

/** What the primary knows when it settles the channel stream's name. */
export type StreamNameFacts = {
  /** STREAM_NAME was set (env or flag): it is used as set, whatever exists. */
  given: boolean;
  /** STREAM_NAME: as set, or its default. */
  name: string;
  subjectPrefix: string;
  /** Which of the streams named `name` and FORMER_DEFAULT_STREAM_NAME exist, each with its subjects. */
  existing: ReadonlyMap<string, readonly string[]>;
};

/** The channel stream's name, and whether it is the former default kept for a store made before. */
export type StreamNameChoice = { name: string; former: boolean };

/**
 * The stream a gateway without STREAM_NAME uses: its default, unless the store has none of that name but has a
 * stream of the former default name on the gateway's subjects (`<SUBJECT_PREFIX>.>`), made by a gateway of
 * before: that one, with its messages. A stream of the former name on other subjects is another program's.
 */
export function chooseStreamName(f: StreamNameFacts): StreamNameChoice {
  if (f.given || f.existing.has(f.name)) return { name: f.name, former: false };
  const former = f.existing.get(FORMER_DEFAULT_STREAM_NAME);
  if (former?.includes(`${f.subjectPrefix}.>`)) return { name: FORMER_DEFAULT_STREAM_NAME, former: true };
  return { name: f.name, former: false };
}

/**
 * The primary's decision, once, before any stream is made and any worker starts: looks up the two candidate
 * streams (none when STREAM_NAME is set) and logs at info when the former default is kept. A look-up the NATS
 * user may not make counts as "not there" (a user granted only EVENTS' subjects, AUTH.md's list of before).
 */
export async function streamNameInUse(jsm: JetStreamManager, f: Omit<StreamNameFacts, "existing">, log: Logger): Promise<string> {
  if (f.given) return f.name;
  const existing = new Map<string, readonly string[]>();
  for (const name of new Set([f.name, FORMER_DEFAULT_STREAM_NAME])) {
    const subjects = await whileElecting(`stream ${name}`, log, () => subjectsOf(jsm, name));
    if (subjects) existing.set(name, subjects);
  }
  const choice = chooseStreamName({ ...f, existing });
  if (choice.former)
    log.info(
      { stream: choice.name, default: f.name },
      `STREAM_NAME is not set and NATS has stream ${choice.name} on ${f.subjectPrefix}.>, the default name before ${f.name}: using it (and its namespace streams ${choice.name}_<NAME>); set STREAM_NAME=${choice.name} to make that explicit`,
    );
  return choice.name;
}

/** The stream's subjects, or undefined when there is no such stream (or the user may not ask). */
async function subjectsOf(jsm: JetStreamManager, name: string): Promise<readonly string[] | undefined> {
  try {
    return (await jsm.streams.info(name)).config.subjects ?? [];
  } catch (e) {
    if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) return undefined;
    if (e instanceof RequestError && e.cause instanceof PermissionViolationError) return undefined;
    throw e;
  }
}

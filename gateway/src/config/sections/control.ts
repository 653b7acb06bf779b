import { type SettingTable, type SliceOf, type ValuesOf, derive, int, section, subjectTokens, trimmed } from "../section-kit.js";
import type { StreamValues } from "./stream.js";
import { parseDuration } from "../parse.js";

const settings = {
  controlSubjectPrefix: {
    env: "CONTROL_SUBJECT_PREFIX",
    shown: "<prefix>ctl",
    doc: "Prefix of the control plane's NATS subjects: backends request <it>.server.disconnect, .unsubscribe, .occupancy, .broadcast, .user; workers answer on <it>.worker.>; must not overlap the stream's subjects",
    default: () => "",
    parse: trimmed,
    check: subjectTokens(true),
  },
  controlTimeout: {
    env: "CONTROL_TIMEOUT",
    shown: "2s",
    doc: "Longest a control request (/v1/server/…) waits for every worker of every gateway instance to answer; past it the answer says complete:false",
    default: () => 2_000,
    parse: parseDuration,
    check: int(50, 60_000),
  },
  controlSettle: {
    env: "CONTROL_SETTLE",
    shown: "20ms",
    doc: "After every instance heard from has answered with all its workers, how long a control request still waits for an instance not heard from yet",
    default: () => 20,
    parse: parseDuration,
    check: int(0, 10_000),
  },
} satisfies SettingTable;

export type ControlValues = ValuesOf<typeof settings>;

export const control = section({
  name: "control",
  title: "The control plane (control/): its NATS subjects and how long a request gathers the workers' answers",
  settings,
  slice: { subjectPrefix: derive(["controlSubjectPrefix"], controlPrefixOf), timeoutMs: "controlTimeout", settleMs: "controlSettle" },
});

export type ControlSection = SliceOf<typeof settings, typeof control.slice>;

/** The control plane's subject prefix: CONTROL_SUBJECT_PREFIX, or `<SUBJECT_PREFIX>ctl`. */
export function controlPrefixOf(c: Pick<ControlValues, "controlSubjectPrefix"> & Pick<StreamValues, "subjectPrefix">): string {
  return c.controlSubjectPrefix || `${c.subjectPrefix}ctl`;
}

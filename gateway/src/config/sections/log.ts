import { type SettingTable, type SliceOf, type ValuesOf, oneOf, section } from "../section-kit.js";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const settings = {
  logLevel: {
    env: "LOG_LEVEL",
    shown: "info",
    doc: "pino level: fatal, error, warn, info, debug, trace, silent",
    default: () => "info" as LogLevel,
    parse: oneOf(...LOG_LEVELS),
  },
} satisfies SettingTable;

export type LogValues = ValuesOf<typeof settings>;

export const log = section({
  name: "log",
  title: "Logging",
  settings,
  slice: { level: "logLevel" },
});

export type LogSection = SliceOf<typeof settings, typeof log.slice>;

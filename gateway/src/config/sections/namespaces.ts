import { type SettingTable, type ValuesOf, derive, section } from "../section-kit.js";
import { readNamespacesFile } from "../../namespaces/file.js";
import { namespacesSection, type NamespacesSection } from "../../namespaces/namespace.js";
import type { NamespacesFile } from "../../namespaces/spec.js";
import { stream, type StreamValues } from "./stream.js";

export type { NamespacesSection };

const settings = {
  namespaces: {
    env: "NAMESPACES_FILE",
    shown: "(none)",
    doc: "JSON or YAML file of namespaces: channel prefixes with a JetStream stream and feature switches of their own (docs/operations.md, Namespaces); read once at start",
    default: (): NamespacesFile => ({ file: "", namespaces: [] }),
    parse: (s: string): NamespacesFile => (s.trim() === "" ? { file: "", namespaces: [] } : readNamespacesFile(s.trim())),
  },
} satisfies SettingTable;

export type NamespacesValues = ValuesOf<typeof settings>;

export const namespaces = section({
  name: "namespaces",
  title: "Channel prefixes with a stream and features of their own; empty without a file",
  settings,
  slice: derive(["namespaces"], (c: NamespacesValues & StreamValues) => namespacesSection(c.namespaces.namespaces, stream.build(c))),
});

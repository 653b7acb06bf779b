import type { Row } from "./rows.js";
import type { Counts } from "./options.js";
import type { Target } from "./servers.js";
export type RunMeta = { startedAt: Date; finishedAt: Date; quick: boolean; targets: Target[]; cores: number; cpu: string; node: string; natscli: string; counts: Counts; maxLoad: number; latencyNote: string | null };
export function renderMarkdown(rows: readonly Row[], meta: RunMeta): string { return JSON.stringify({ rows: rows.length, meta }); }

import type { Row } from "./rows.js";
import type { RunMeta } from "./report.js";
export async function renderPng(_rows: readonly Row[], _meta: RunMeta, _file: string): Promise<void> {}

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { settingsTable } from "../../src/config/config.js";

describe("docs — README settings table", () => {
  it("is the table the code prints (run scripts/readme-settings.sh after changing a setting)", () => {
    const readme = readFileSync("README.md", "utf8");
    const m = /<!-- settings-table:[^\n]*-->\n([\s\S]*?)\n<!-- \/settings-table -->/.exec(readme);
    expect(m?.[1]).toBe(settingsTable());
  });
});

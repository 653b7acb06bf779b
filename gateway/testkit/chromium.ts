// Debian's chromium, headless, driven by playwright-core (no browser downloads here): the browser tests and
// the benchmarks' chart rendering use this one launcher. CHROMIUM_PATH overrides the binary.
import type { Browser } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** A fresh browser; launch() gives every run a temporary profile (user-data-dir), removed on close. */
export async function launchChromium(): Promise<Browser> {
  // Imported when needed: benchmarks that draw no chart do not load playwright-core.
  const { chromium } = await import("playwright-core");
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

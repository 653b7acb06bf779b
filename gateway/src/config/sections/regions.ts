import { type SettingTable, type SliceOf, type ValuesOf, derive, int, section, trimmed } from "../section-kit.js";
import { parseDuration, parseList } from "../parse.js";
import { ConfigError } from "../../errors.js";

// Regions (docs/operations.md "Regions"): gateways in several regions of one NATS supercluster. Each channel
// stream lives in the home region; every other region holds a mirror of it that keeps its sequences, so a
// client resumes in any region at the position it had in another. Without REGION the gateway is one region
// and nothing of this applies.

/** A region's name: a NATS cluster (and gateway) name, used as a subject token and in stream names. */
const REGION_NAME = /^[A-Za-z0-9_-]{1,32}$/;
const checkName = (v: string): string | undefined =>
  v === "" || REGION_NAME.test(v) ? undefined : "must be 1 to 32 letters, digits, _ or - (the NATS cluster's name)";

const settings = {
  region: {
    env: "REGION",
    shown: "(unset)",
    doc: "The region this gateway runs in: the name of the NATS cluster (of a supercluster) its NATS_URL servers belong to. Unset: one region, no mirrors",
    default: () => "",
    parse: trimmed,
    check: checkName,
  },
  regions: {
    env: "REGIONS",
    shown: "(unset)",
    doc: "Comma list of every region (NATS cluster names) with gateways, REGION among them; each but the home region holds a mirror of every channel stream",
    default: () => [] as string[],
    parse: parseList,
  },
  homeRegion: {
    env: "HOME_REGION",
    shown: "(first of REGIONS)",
    doc: "The region the channel streams live in (their placement): every publish is stored there, in any region",
    default: () => "",
    parse: trimmed,
    check: checkName,
  },
  regionResumeWaitMs: {
    env: "REGION_RESUME_WAIT",
    shown: "2s",
    doc: "How long a read of messages the home region holds but this region's mirror has not copied yet waits for the mirror; then it reads them from the home region",
    default: () => 2_000,
    parse: parseDuration,
    check: int(0, 60_000),
  },
} satisfies SettingTable;

export type RegionsValues = ValuesOf<typeof settings>;

/** The regions as the gateway runs them: where it is, where the streams live, and every region with gateways. */
export type RegionLayout = Readonly<{
  /** REGION: the NATS cluster this gateway's servers belong to. */
  region: string;
  /** HOME_REGION: where the channel streams are placed (their origin). */
  home: string;
  /** REGIONS, in the order given. */
  regions: readonly string[];
  /** REGION_RESUME_WAIT in ms. */
  resumeWaitMs: number;
}>;

/** The layout from the settings, or undefined without REGION (one region); pure. Call `checkRegions` first. */
export function regionLayout(c: RegionsValues): RegionLayout | undefined {
  if (c.region === "") return undefined;
  return Object.freeze({
    region: c.region,
    home: c.homeRegion || (c.regions[0] as string),
    regions: Object.freeze([...c.regions]),
    resumeWaitMs: c.regionResumeWaitMs,
  });
}

/**
 * The combinations of the region settings that cannot work, each refused naming the setting: REGION needs
 * REGIONS (with REGION and HOME_REGION in it, no name twice), a JetStream broker, and NATS servers of its own
 * (NATS_URL: the embedded nats-server is no supercluster); REGIONS and HOME_REGION without REGION do nothing.
 */
export function checkRegions(c: RegionsValues & { broker: string; natsUrl: readonly string[] }): void {
  if (c.region === "") {
    if (c.regions.length > 0) throw new ConfigError("REGIONS", "invalid REGIONS (--regions): has no effect without REGION (the region this gateway runs in)");
    if (c.homeRegion)
      throw new ConfigError("HOME_REGION", "invalid HOME_REGION (--home-region): has no effect without REGION (the region this gateway runs in)");
    return;
  }
  const setting = "invalid REGION (--region)";
  if (c.broker !== "jetstream") throw new ConfigError("REGION", `${setting}: regions need BROKER=jetstream (mirrors of the channel streams)`);
  if (c.natsUrl.length === 0)
    throw new ConfigError(
      "REGION",
      `${setting}: regions need NATS_URL (servers of the region's cluster in a supercluster); the embedded nats-server is one server`,
    );
  if (c.regions.length === 0) throw new ConfigError("REGIONS", "invalid REGIONS (--regions): REGION needs REGIONS, the list of every region");
  for (const r of c.regions) {
    const bad = checkName(r);
    if (bad) throw new ConfigError("REGIONS", `invalid REGIONS (--regions): "${r}" ${bad}`);
  }
  const twice = c.regions.find((r, i) => c.regions.indexOf(r) !== i);
  if (twice !== undefined) throw new ConfigError("REGIONS", `invalid REGIONS (--regions): "${twice}" is listed twice`);
  if (!c.regions.includes(c.region)) throw new ConfigError("REGION", `${setting}: "${c.region}" is not in REGIONS (${c.regions.join(", ")})`);
  if (c.homeRegion && !c.regions.includes(c.homeRegion))
    throw new ConfigError("HOME_REGION", `invalid HOME_REGION (--home-region): "${c.homeRegion}" is not in REGIONS (${c.regions.join(", ")})`);
}

export const regions = section({
  name: "regions",
  title: "Regions: gateways in several clusters of a NATS supercluster, each reading from its region's mirror of the channel streams",
  settings,
  slice: derive(["region", "regions", "homeRegion", "regionResumeWaitMs"], regionLayout),
});

export type RegionsSection = SliceOf<typeof settings, typeof regions.slice>;

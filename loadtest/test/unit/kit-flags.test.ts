import { describe, expect, it } from "vitest";
import { FlagError, parseFlags, std, usage, type FlagSpec } from "../../kit/flags.js";

const SPEC = {
  clients: std("clients", { default: 200, quick: 50 }),
  rounds: std("rounds", { default: 9, quick: 2, max: 20 }),
  seconds: std("seconds"),
  engine: { type: "string", default: "lean", choices: ["lean", "ws"], help: "client engine" },
  brokers: { type: "list", default: ["jetstream", "redis"], choices: ["jetstream", "redis"], help: "brokers" },
  out: std("out"),
  quick: std("quick"),
  json: std("json"),
  role: { type: "string", default: "main", internal: true, help: "the process's part" },
} as const satisfies FlagSpec;

const bad = (argv: string[]): string => {
  try {
    parseFlags(SPEC, argv);
  } catch (e) {
    expect(e).toBeInstanceOf(FlagError);
    return (e as Error).message;
  }
  throw new Error(`no error for ${argv.join(" ")}`);
};

describe("bench kit — flags", () => {
  it("flags — defaults apply when nothing is given; booleans are false, optional values undefined", () => {
    const v = parseFlags(SPEC, []);
    expect(v).toEqual({
      clients: 200,
      rounds: 9,
      seconds: undefined,
      engine: "lean",
      brokers: ["jetstream", "redis"],
      out: undefined,
      quick: false,
      json: false,
      role: "main",
    });
  });

  it("flags — numbers are parsed and typed; lists split on commas", () => {
    const v = parseFlags(SPEC, ["--clients", "800", "--seconds", "2.5", "--brokers", "redis", "--engine=ws", "--json"]);
    expect(v.clients).toBe(800);
    expect(v.seconds).toBe(2.5);
    expect(v.brokers).toEqual(["redis"]);
    expect(v.engine).toBe("ws");
    expect(v.json).toBe(true);
  });

  it("flags — --quick swaps in each flag's quick value, but a flag given explicitly wins", () => {
    expect(parseFlags(SPEC, ["--quick"])).toMatchObject({ quick: true, clients: 50, rounds: 2 });
    expect(parseFlags(SPEC, ["--quick", "--clients", "7"])).toMatchObject({ clients: 7, rounds: 2 });
  });

  it("flags — a bad number, a number out of range or not whole, and a bad choice are refused naming the flag", () => {
    expect(bad(["--clients", "many"])).toBe('--clients must be a number, not "many"');
    expect(bad(["--clients", ""])).toBe('--clients must be a number, not ""');
    expect(bad(["--rounds", "0"])).toBe("--rounds must be at least 1, not 0");
    expect(bad(["--rounds", "21"])).toBe("--rounds must be at most 20, not 21");
    expect(bad(["--rounds", "1.5"])).toBe("--rounds must be a whole number, not 1.5");
    expect(bad(["--engine", "pigeon"])).toBe('--engine must be one of lean, ws, not "pigeon"');
    expect(bad(["--brokers", "jetstream,kafka"])).toBe('--brokers must be one of jetstream, redis, not "kafka"');
  });

  it("flags — an unknown flag, a missing value and a stray argument are refused", () => {
    expect(bad(["--bogus"])).toMatch(/Unknown option '--bogus'/);
    expect(bad(["--clients"])).toMatch(/--clients/);
    expect(bad(["stray"])).toMatch(/stray/);
  });

  it("flags — the standard flags mean the same in every bench: std() keeps the help and type, lays the bench's defaults over them", () => {
    const a = std("rounds", { default: 3 });
    const b = std("rounds", { default: 16 });
    expect(a.help).toBe(b.help);
    expect([a.type, a.default, b.default]).toEqual(["number", 3, 16]);
  });

  it("flags — --help lists every flag with its default and --quick value, and hides internal ones", () => {
    const text = usage("demo", "what it measures", SPEC);
    expect(text).toMatch(/^npm run bench -- demo \[flags\]\nwhat it measures\n/);
    expect(text).toMatch(/--clients N +client connections \(default 200; --quick 50\)/);
    expect(text).toMatch(/--engine lean\|ws +client engine \(default lean\)/);
    expect(text).toMatch(/--brokers A,B +brokers \(default jetstream,redis\)/);
    expect(text).not.toMatch(/--role/);
  });
});

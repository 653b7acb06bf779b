import { describe, expect, it } from "vitest";
import { parseSubOptions, UsageError } from "../../src/options.js";

describe("sub-cluster options", () => {
  it("sub-cluster options — the users' command line keeps its meaning", () => {
    const o = parseSubOptions(["-c", "8", "-n", "100"]);
    expect(o).toMatchObject({ processes: 8, clientsPerProcess: 100, target: "gateway", port: 9000, hosts: ["127.0.0.1"], channels: ["bench.x"] });
    expect(parseSubOptions(["-c", "5", "-n", "700", "-H", "10.0.0.9"]).hosts).toEqual(["10.0.0.9"]);
  });

  it("sub-cluster options — hosts and channels are comma lists or repeated flags; ports default per target", () => {
    const o = parseSubOptions(["-H", "a,b", "-H", "c", "--channel", "x.1,x.2", "--channel", "x.3", "--target", "redis"]);
    expect(o.hosts).toEqual(["a", "b", "c"]);
    expect(o.channels).toEqual(["x.1", "x.2", "x.3"]);
    expect(o.port).toBe(6379);
    expect(parseSubOptions(["--target", "nats"]).port).toBe(4222);
    expect(parseSubOptions(["-p", "1234"]).port).toBe(1234);
  });

  it("sub-cluster options — replay positions", () => {
    expect(parseSubOptions(["--from", "all"]).from).toBe("all");
    expect(parseSubOptions(["--from", "17"]).from).toEqual({ seq: 17 });
    expect(parseSubOptions(["--from", "last:5"]).from).toEqual({ last: 5 });
  });

  it("sub-cluster options — connection attempts in flight per process: 256 unless --max-pending says", () => {
    expect(parseSubOptions([]).maxPending).toBe(256);
    expect(parseSubOptions(["--max-pending", "36"]).maxPending).toBe(36);
    expect(() => parseSubOptions(["--max-pending", "0"])).toThrow(/--max-pending/);
  });

  it("sub-cluster options — bad values are refused with a reason", () => {
    expect(() => parseSubOptions(["-c", "0"])).toThrow(UsageError);
    expect(() => parseSubOptions(["-n", "ten"])).toThrow(/-n must be an integer/);
    expect(() => parseSubOptions(["--target", "kafka"])).toThrow(/--target/);
    expect(() => parseSubOptions(["--from", "yesterday"])).toThrow(/--from/);
    expect(() => parseSubOptions(["--target", "redis", "--from", "all"])).toThrow(/replay/);
    expect(() => parseSubOptions(["-p", "1", "--port", "2"])).toThrow(/not both/);
    expect(() => parseSubOptions(["--bogus"])).toThrow();
  });
});

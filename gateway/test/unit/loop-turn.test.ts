import { describe, expect, it } from "vitest";
import { LoopTurn } from "../../src/util/loop-turn.js";

describe("LoopTurn — the publishes of one event-loop turn go together", () => {
  it("callers of one turn resume together, in call order, after the turn's I/O; a later caller waits for the next turn", async () => {
    const turn = new LoopTurn();
    const order: string[] = [];
    const first = [turn.wait().then(() => order.push("a")), turn.wait().then(() => order.push("b")), turn.wait().then(() => order.push("c"))];
    await Promise.resolve();
    expect(order).toEqual([]); // nothing resumes before the turn ends
    await Promise.all(first);
    expect(order).toEqual(["a", "b", "c"]);
    const p1 = turn.wait();
    await p1;
    const p2 = turn.wait();
    expect(p2).not.toBe(p1);
    await p2;
  });
});

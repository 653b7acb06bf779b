// Entry point of each forked pub-cluster process.
import { runPubWorker } from "./worker.js";

runPubWorker();

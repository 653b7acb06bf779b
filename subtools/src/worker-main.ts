// Entry point of each forked sub-cluster process.
import { runWorker } from "./worker.js";

runWorker();

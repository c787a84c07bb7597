// The "CLI" pi 1.6.0's RpcClient starts with node: it runs the pi under test
// (PI_CONFORMANCE_TARGET, a JSON array: the command and its first arguments) with the
// RPC arguments, on the same stdin/stdout, and ends as that pi ends.
import { spawn } from "node:child_process";

const [command, ...first] = JSON.parse(process.env.PI_CONFORMANCE_TARGET);
const child = spawn(command, [...first, ...process.argv.slice(2)], { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
child.on("error", (error) => {
  process.stderr.write(`rpc_shim: cannot start ${command}: ${error.message}\n`);
  process.exit(127);
});

// The Vercel AI SDK (npm `ai` with `@ai-sdk/openai`) as a client of `lllm serve` (run by lllm-cli's
// `serve_clients` tests): `openai.responses(MODEL)` with its default `store`, so earlier assistant
// turns go back as `item_reference`s to lllm's own output items. The last turn is streamed.
//
// Usage: node vercel_ai.mjs BASE_URL MODEL TURNS, with LLLM_NODE_MODULES naming the node_modules
// folder that holds the packages (scripts/servers/clients.sh's node-clients wrapper sets it).
// Prints "turn N: ANSWER" for each turn.
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [base, model, turns] = [process.argv[2], process.argv[3], Number(process.argv[4])];
// An ES module outside that folder cannot import the packages by name: resolve them from there.
const require = createRequire(join(process.env.LLLM_NODE_MODULES, "resolve.js"));
const load = (name) => import(pathToFileURL(require.resolve(name)).href);
const { generateText, streamText } = await load("ai");
const { createOpenAI } = await load("@ai-sdk/openai");

const openai = createOpenAI({ baseURL: base, apiKey: "not-needed" });
const messages = [];
for (let turn = 1; turn <= turns; turn++) {
  messages.push({ role: "user", content: `question ${turn}` });
  const call = { model: openai.responses(model), system: "Be brief.", messages, maxRetries: 0 };
  let text, response;
  if (turn < turns) {
    ({ text, response } = await generateText(call));
  } else {
    const streamed = streamText(call);
    [text, response] = [await streamed.text, await streamed.response];
  }
  messages.push(...response.messages);
  console.log(`turn ${turn}: ${text}`);
}

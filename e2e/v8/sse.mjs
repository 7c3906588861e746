// sse.mjs: the streamed responses bench.mjs answers admitted requests with.

// sseStream is a chat completion streamed as OpenAI sends it with
// stream_options.include_usage: a chunk event per token (~230 bytes), the
// finish event, the usage event (choices empty) and [DONE]. It has `events`
// token events, or as many as make it at least `bytes` long.
export function sseStream({ events = Infinity, bytes = 0, prompt_tokens, completion_tokens }) {
  const head = '{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,' +
    '"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[';
  const words = [" The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ",", " and", " then", " it", " rests", "."];
  const ev = (choices, usage = "null") => `data: ${head}${choices}],"usage":${usage}}\n\n`;
  const usage = JSON.stringify({
    prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  });
  const tail = ev('{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}') + ev("", usage) + "data: [DONE]\n\n";
  const parts = [ev('{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}')];
  let size = parts[0].length + tail.length;
  for (let i = 0; bytes > 0 ? size < bytes : i < events; i++) {
    const e = ev(`{"index":0,"delta":{"content":${JSON.stringify(words[i % words.length])}},"logprobs":null,"finish_reason":null}`);
    parts.push(e);
    size += e.length;
  }
  parts.push(tail);
  return Buffer.from(parts.join(""));
}

// response is what an admitted request of a scenario gets: its headers
// and body chunks (views of one buffer), or null for headers only.
export function streamResponse(def, chunk) {
  const body = sseStream(def);
  const chunks = [];
  for (let i = 0; i < body.length; i += chunk) chunks.push(body.subarray(i, Math.min(body.length, i + chunk)));
  return { headers: [[":status", "200"], ["content-type", "text/event-stream"]], chunks, bytes: body.length };
}

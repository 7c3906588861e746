package usage

import (
	"slices"
	"sync"

	"github.com/redisrate/envoy-redis-ratelimit/filter/price"
)

// Preset returns the fields of the named preset (openai_chat,
// openai_responses, anthropic); ok is false for any other name.
func Preset(name string) (f *Fields, ok bool) {
	p, ok := presets()[name]
	if !ok {
		return nil, false
	}
	return &p, true
}

// PresetNames lists the presets' names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets()))
	for n := range presets() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// cacheTotal is the anthropic preset's slot past the kinds: its
// cache_creation_input_tokens, the 5-minute and 1-hour writes together,
// read when the split is absent (Scanner.Tokens).
const cacheTotal = price.Kinds

// presets by configuration name. What each counts (summed: the first two
// fields; the others tell the kinds apart, for prices):
//
//   - openai_chat (Chat Completions): prompt_tokens, which includes cached
//     prompt tokens (prompt_tokens_details.cached_tokens), plus
//     completion_tokens, which includes reasoning and audio tokens
//     (completion_tokens_details.reasoning_tokens). Streamed, usage comes
//     only with stream_options.include_usage, in the last chunk (choices
//     empty) before [DONE]; the other chunks carry "usage":null. The
//     service tier: service_tier, in the body and in each chunk.
//   - openai_responses (Responses): input_tokens, including
//     input_tokens_details.cached_tokens, plus output_tokens, including
//     output_tokens_details.reasoning_tokens. Streamed: response.usage of
//     response.completed (also of response.incomplete and response.failed,
//     same shape; response.created has "usage":null). The service tier:
//     service_tier, response.service_tier streamed.
//   - anthropic (Messages): input_tokens, which excludes cache reads and
//     writes (cache_read_input_tokens; cache_creation_input_tokens, split
//     into cache_creation.ephemeral_5m_input_tokens and
//     ephemeral_1h_input_tokens), plus output_tokens, which includes
//     extended thinking; server_tool_use.web_search_requests and
//     web_fetch_requests count server tool calls. Streamed:
//     message_start's message.usage, then each message_delta's usage,
//     cumulative: output_tokens always, and, with server tools,
//     input_tokens, the cache counts and server_tool_use. The service
//     tier: usage.service_tier.
//
// Built on first use, by a configuration that names a preset: not at
// every VM's start, where V8 would compile it.
func presets() map[string]Fields {
	presetTable.once.Do(func() { presetTable.m = buildPresets() })
	return presetTable.m
}

var presetTable struct {
	once sync.Once
	m    map[string]Fields
}

func buildPresets() map[string]Fields {
	return map[string]Fields{
		"openai_chat": preset(true, [2]string{"model", "model"}, [3]string{"service_tier", "service_tier"},
			kindPath{price.Input, "usage.prompt_tokens", "usage.prompt_tokens"},
			kindPath{price.Output, "usage.completion_tokens", "usage.completion_tokens"},
			kindPath{price.Cached, "usage.prompt_tokens_details.cached_tokens", "usage.prompt_tokens_details.cached_tokens"},
			kindPath{price.Reasoning, "usage.completion_tokens_details.reasoning_tokens", "usage.completion_tokens_details.reasoning_tokens"}),
		"openai_responses": preset(true, [2]string{"model", "response.model"}, [3]string{"service_tier", "response.service_tier"},
			kindPath{price.Input, "usage.input_tokens", "response.usage.input_tokens"},
			kindPath{price.Output, "usage.output_tokens", "response.usage.output_tokens"},
			kindPath{price.Cached, "usage.input_tokens_details.cached_tokens", "response.usage.input_tokens_details.cached_tokens"},
			kindPath{price.Reasoning, "usage.output_tokens_details.reasoning_tokens", "response.usage.output_tokens_details.reasoning_tokens"}),
		"anthropic": anthropic(),
	}
}

// anthropic is the anthropic preset: each field in a JSON body's usage,
// and in an event's message.usage (message_start) or usage
// (message_delta). The server tool counts ride along: an event is read
// for its token counts, which every usage carries.
func anthropic() Fields {
	var paths []kindPath
	for _, k := range []struct {
		kind  uint8
		field string
	}{
		{price.Input, "input_tokens"},
		{price.Output, "output_tokens"},
		{price.Cached, "cache_read_input_tokens"},
		{cacheTotal, "cache_creation_input_tokens"},
		{price.CacheWrite, "cache_creation.ephemeral_5m_input_tokens"},
		{price.CacheWrite1h, "cache_creation.ephemeral_1h_input_tokens"},
		{price.WebSearch, "server_tool_use.web_search_requests"},
		{price.WebFetch, "server_tool_use.web_fetch_requests"},
	} {
		paths = append(paths,
			kindPath{k.kind, "usage." + k.field, "message.usage." + k.field},
			kindPath{k.kind, "", "usage." + k.field})
	}
	f := preset(false, [2]string{"model", "message.model"}, [3]string{"usage.service_tier", "message.usage.service_tier", "usage.service_tier"}, paths...)
	f.slots, f.split = price.Kinds+1, true
	return f
}

// kindPath is a preset's field of one kind (a slot), in a JSON body and
// in an event ("" when none).
type kindPath struct {
	kind      uint8
	json, sse string
}

// preset builds a preset's fields: model and tier are the paths of the
// model and of the service tier in a JSON body, then in an event (two for
// the tier); an event path of a PerRequest kind is a rider (Fields).
func preset(included bool, model [2]string, tier [3]string, paths ...kindPath) Fields {
	f := Fields{slots: price.Kinds, counted: 1<<price.Input | 1<<price.Output, kinds: true, included: included, model: model, tier: tier}
	var riders []kindPath
	for _, p := range paths {
		if p.json != "" {
			f.json, f.jsonSlot = append(f.json, p.json), append(f.jsonSlot, p.kind)
		}
		if p.kind < price.Kinds && price.PerRequest(int(p.kind)) {
			riders = append(riders, p)
			continue
		}
		f.sse, f.sseSlot = append(f.sse, p.sse), append(f.sseSlot, p.kind)
	}
	for _, p := range riders {
		f.sse, f.sseSlot = append(f.sse, p.sse), append(f.sseSlot, p.kind)
	}
	f.riders = len(riders)
	return f
}

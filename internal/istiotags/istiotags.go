// Package istiotags holds, for tests, the stats_tags regexes of Istio's
// Envoy bootstrap that could cut a part out of the filter's metric names.
package istiotags

import "regexp"

// Tags are the stats_tags regexes of Istio's bootstrap
// (tools/packaging/common/envoy_bootstrap.json) that are not anchored to a
// prefix our metrics cannot have (cluster., tcp., listener., http., mongo.)
// and do not need "=" (the name=.=value;.; tags), which a rule name cannot
// hold. The response_code regexes end in $, after a digit; ours end in an
// outcome word.
var Tags = map[string]*regexp.Regexp{
	"cache":                regexp.MustCompile(`(cache\.(.+?)\.)`),
	"component":            regexp.MustCompile(`(component\.(.+?)\.)`),
	"tag":                  regexp.MustCompile(`(tag\.(.+?);\.)`),
	"wasm_filter":          regexp.MustCompile(`(wasm_filter\.(.+?)\.)`),
	"authz_enforce_result": regexp.MustCompile(`rbac(\.(allowed|denied))`),
	"authz_dry_run_action": regexp.MustCompile(`(\.istio_dry_run_(allow|deny)_)`),
	"authz_dry_run_result": regexp.MustCompile(`(\.shadow_(allowed|denied))`),
	"response_code":        regexp.MustCompile(`_rq(_(\d{3}))$`),
	"response_code_class":  regexp.MustCompile(`_rq(_(\dxx))$`),
}

// Match returns the tag whose regex matches name, or "".
func Match(name string) string {
	for tag, re := range Tags {
		if re.MatchString(name) {
			return tag
		}
	}
	return ""
}

// Package schema holds config.schema.json, the JSON Schema (draft 2020-12) of
// the filter's plugin configuration, for editors, CI linters and
// admission checks, and validates configurations against it.
//
// config.Parse stays the authority: the tests of this package prove
// that the schema and the parser accept exactly the same configurations,
// except for the checks a JSON Schema cannot express, which they name.
package schema

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSON is the schema document, config.schema.json.
//
//go:embed config.schema.json
var JSON []byte

// ID is the schema's $id.
const ID = "https://github.com/redisrate/envoy-redis-ratelimit/schema/config.schema.json"

var compiled = sync.OnceValues(Compile)

// Compile compiles the schema, checking it against the draft 2020-12
// metaschema.
func Compile() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSON))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(ID, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return c.Compile(ID)
}

// Validate reports whether data is a JSON document the schema accepts.
func Validate(data []byte) error {
	s, err := compiled()
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("schema: not valid JSON: %w", err)
	}
	return s.Validate(inst)
}

package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Files that embed a plugin configuration, relative to the repository root.
const (
	EnvoyBootstrap           = "envoy.yaml"
	EnvoyClusterBootstrap    = "deploy/envoy-cluster.yaml"
	IstioWasmPlugin          = "deploy/istio/wasmplugin.yaml"
	IstioClusterWasmPlugin   = "deploy/istio/cluster/wasmplugin.yaml"
	HigressWasmPlugin        = "deploy/higress/wasmplugin.yaml"
	ComposeHigressWasmPlugin = "deploy/compose/higress/wasmplugins/ratelimit.yaml"
)

// WasmFilterType is the type URL of Envoy's HTTP wasm filter configuration.
const WasmFilterType = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm"

// Document is one document of a YAML file, converted to JSON.
type Document struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	JSON       []byte
}

// ReadYAML reads every document of a YAML file ("---" separated, empty ones
// skipped) and converts each to JSON. Duplicate keys and keys that are not
// strings are errors.
func ReadYAML(path string) ([]Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []Document
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if v == nil {
			continue
		}
		js, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, len(docs), err)
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(js, &meta) // not every document is a Kubernetes object
		docs = append(docs, Document{APIVersion: meta.APIVersion, Kind: meta.Kind,
			Name: meta.Metadata.Name, Namespace: meta.Metadata.Namespace, JSON: js})
	}
}

// ReadYAMLOne reads a YAML file that must hold exactly one document.
func ReadYAMLOne(path string) (Document, error) {
	docs, err := ReadYAML(path)
	if err != nil {
		return Document{}, err
	}
	if len(docs) != 1 {
		return Document{}, fmt.Errorf("%s: %d documents, want 1", path, len(docs))
	}
	return docs[0], nil
}

// PluginConfig is a filter configuration embedded in a deployment file.
type PluginConfig struct {
	File  string // relative to the repository root
	Where string // where in the file, e.g. "WasmPlugin istio-system/ratelimit: spec.pluginConfig"
	JSON  []byte
}

// PluginConfigs returns every plugin configuration embedded in the files
// above, under the repository root. A file that embeds none is an error.
func PluginConfigs(root string) ([]PluginConfig, error) {
	var out []PluginConfig
	for _, file := range []string{EnvoyBootstrap, EnvoyClusterBootstrap} {
		envoy, err := ReadYAMLOne(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		cfgs, err := EnvoyPluginConfigs(envoy.JSON)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for i, c := range cfgs {
			out = append(out, PluginConfig{File: file, Where: fmt.Sprintf("wasm filter %d: config.configuration", i), JSON: c})
		}
	}
	for _, f := range []struct{ file, field string }{
		{IstioWasmPlugin, "pluginConfig"},
		{IstioClusterWasmPlugin, "pluginConfig"},
		{HigressWasmPlugin, "defaultConfig"},
		{ComposeHigressWasmPlugin, "defaultConfig"},
		{HigressMatchRulesWasmPlugin, "matchRules"}, // as Higress converts it
	} {
		found := 0
		docs, err := ReadYAML(filepath.Join(root, f.file))
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if d.Kind != "WasmPlugin" {
				continue
			}
			var spec struct {
				Spec map[string]json.RawMessage `json:"spec"`
			}
			if err := json.Unmarshal(d.JSON, &spec); err != nil {
				return nil, fmt.Errorf("%s: %w", f.file, err)
			}
			if c, ok := spec.Spec[f.field]; ok {
				if f.field == "matchRules" {
					b, _ := json.Marshal(spec.Spec)
					if c, err = HigressPluginConfig(b); err != nil {
						return nil, fmt.Errorf("%s: %w", f.file, err)
					}
				}
				out = append(out, PluginConfig{File: f.file, JSON: c,
					Where: fmt.Sprintf("WasmPlugin %s/%s: spec.%s", d.Namespace, d.Name, f.field)})
				found++
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("%s: no WasmPlugin with spec.%s", f.file, f.field)
		}
	}
	return out, nil
}

// EnvoyPluginConfigs returns the plugin configuration string of every wasm
// HTTP filter in an Envoy bootstrap (as JSON), found by its type URL
// anywhere in the document. Each must be a google.protobuf.StringValue.
func EnvoyPluginConfigs(bootstrap []byte) ([][]byte, error) {
	var root any
	if err := json.Unmarshal(bootstrap, &root); err != nil {
		return nil, err
	}
	var out [][]byte
	var walkErr error
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["@type"] == WasmFilterType {
				cfg, _ := v["config"].(map[string]any)
				conf, _ := cfg["configuration"].(map[string]any)
				s, ok := conf["value"].(string)
				if conf["@type"] != "type.googleapis.com/google.protobuf.StringValue" || !ok {
					walkErr = errors.New("a wasm filter's config.configuration is not a google.protobuf.StringValue")
					return
				}
				out = append(out, []byte(s))
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(root)
	if walkErr != nil {
		return nil, walkErr
	}
	if len(out) == 0 {
		return nil, errors.New("no wasm filter (" + WasmFilterType + ")")
	}
	return out, nil
}

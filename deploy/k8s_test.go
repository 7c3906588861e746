package deploy

import (
	"encoding/json"
	"maps"
	"strconv"
	"testing"
)

// The parts of Kubernetes objects the tests read. They are checked for
// agreement across files; the API server checks the rest.

type k8sObject struct {
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec       json.RawMessage   `json:"spec"`
	Data       map[string]string `json:"data"`
	StringData map[string]string `json:"stringData"`
}

type serviceSpec struct {
	Selector map[string]string `json:"selector"`
	Ports    []struct {
		Name       string          `json:"name"`
		Port       int             `json:"port"`
		TargetPort json.RawMessage `json:"targetPort"`
	} `json:"ports"`
}

type deploymentSpec struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	Template struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Containers []container `json:"containers"`
			Volumes    []struct {
				Name   string `json:"name"`
				Secret struct {
					SecretName string `json:"secretName"`
				} `json:"secret"`
			} `json:"volumes"`
		} `json:"spec"`
	} `json:"template"`
}

type container struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
	Args    []string `json:"args"`
	Env     []struct {
		Name      string `json:"name"`
		ValueFrom struct {
			SecretKeyRef struct {
				Name string `json:"name"`
				Key  string `json:"key"`
			} `json:"secretKeyRef"`
		} `json:"valueFrom"`
	} `json:"env"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
}

func decodeObject(t *testing.T, d Document, spec any) k8sObject {
	t.Helper()
	var o k8sObject
	if err := json.Unmarshal(d.JSON, &o); err != nil {
		t.Fatalf("%s %s: %v", d.Kind, d.Name, err)
	}
	if spec != nil {
		if err := json.Unmarshal(o.Spec, spec); err != nil {
			t.Fatalf("%s %s: spec: %v", d.Kind, d.Name, err)
		}
	}
	return o
}

// servedPort checks that a Service selects exactly the Deployment's pods and
// has the given port, and returns the container port it targets.
func servedPort(t *testing.T, svc serviceSpec, dep deploymentSpec, port int) int {
	t.Helper()
	labels := dep.Template.Metadata.Labels
	if !maps.Equal(dep.Selector.MatchLabels, labels) || len(svc.Selector) == 0 {
		t.Fatalf("deployment selector %v, pod labels %v, service selector %v", dep.Selector.MatchLabels, labels, svc.Selector)
	}
	for k, v := range svc.Selector {
		if labels[k] != v {
			t.Fatalf("service selector %v does not select pods labelled %v", svc.Selector, labels)
		}
	}
	for _, p := range svc.Ports {
		if p.Port != port {
			continue
		}
		if len(p.TargetPort) == 0 {
			return p.Port
		}
		var name string
		if n, err := strconv.Atoi(string(p.TargetPort)); err == nil {
			return n
		} else if err := json.Unmarshal(p.TargetPort, &name); err != nil {
			t.Fatalf("targetPort %s", p.TargetPort)
		}
		for _, c := range dep.Template.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == name {
					return cp.ContainerPort
				}
			}
		}
		t.Fatalf("targetPort %q names no container port", name)
	}
	t.Fatalf("service has no port %d", port)
	return 0
}

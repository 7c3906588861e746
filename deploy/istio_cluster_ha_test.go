package deploy

import (
	"maps"
	"slices"
	"testing"
)

type networkPolicySpec struct {
	PodSelector labelSelector `json:"podSelector"`
	PolicyTypes []string      `json:"policyTypes"`
	Ingress     []struct {
		From []struct {
			PodSelector       *labelSelector `json:"podSelector"`
			NamespaceSelector *labelSelector `json:"namespaceSelector"`
		} `json:"from"`
		Ports []struct {
			Port string `json:"port"`
		} `json:"ports"`
	} `json:"ingress"`
}

type labelSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// istio/cluster/'s NetworkPolicy: the cluster bus, which takes no
// password, only from the nodes; Webdis only from the gateway the
// WasmPlugin selects; Redis from the namespace; nothing else.
func TestIstioClusterNetworkPolicy(t *testing.T) {
	docs := istioClusterDocs(t)
	var np networkPolicySpec
	decodeObject(t, findDoc(t, docs, "NetworkPolicy", "redis-cluster"), &np)
	var sts statefulSetSpec
	decodeObject(t, findDoc(t, docs, "StatefulSet", "redis-cluster"), &sts)
	pods := sts.Template.Metadata.Labels
	if !maps.Equal(np.PodSelector.MatchLabels, pods) || !slices.Equal(np.PolicyTypes, []string{"Ingress"}) {
		t.Errorf("NetworkPolicy selects %v (%v), want the StatefulSet's pods %v, Ingress", np.PodSelector.MatchLabels, np.PolicyTypes, pods)
	}
	named := map[string]bool{}
	for _, c := range sts.Template.Spec.Containers {
		for _, p := range c.Ports {
			named[p.Name] = true
		}
	}
	wp := istioWasmPlugin(t, findDoc(t, docs, "WasmPlugin", "ratelimit"))
	wpNS := decodeObject(t, findDoc(t, docs, "WasmPlugin", "ratelimit"), nil).Metadata.Namespace
	allowed := map[string]bool{}
	for i, rule := range np.Ingress {
		if len(rule.From) == 0 || len(rule.Ports) == 0 {
			t.Errorf("ingress[%d]: from %v, ports %v: an empty list allows every peer or port", i, rule.From, rule.Ports)
		}
		for _, p := range rule.Ports {
			if !named[p.Port] {
				t.Errorf("ingress[%d]: port %q is no container port's name", i, p.Port)
			}
			for _, f := range rule.From {
				nodes := f.NamespaceSelector == nil && f.PodSelector != nil && maps.Equal(f.PodSelector.MatchLabels, pods)
				sameNS := f.NamespaceSelector == nil && f.PodSelector != nil
				gateway := f.NamespaceSelector != nil && f.PodSelector != nil &&
					maps.Equal(f.NamespaceSelector.MatchLabels, map[string]string{"kubernetes.io/metadata.name": wpNS}) &&
					maps.Equal(f.PodSelector.MatchLabels, wp.GetSelector().GetMatchLabels())
				ok := p.Port == "bus" && nodes || p.Port == "redis" && sameNS || p.Port == "http" && gateway
				if !ok {
					t.Errorf("ingress[%d]: port %s from %+v: too wide", i, p.Port, f)
				}
				allowed[p.Port+"/"+map[bool]string{true: "nodes", false: "other"}[nodes]] = true
			}
		}
	}
	for _, want := range []string{"bus/nodes", "redis/nodes", "http/other"} {
		if !allowed[want] {
			t.Errorf("NetworkPolicy: no rule for %s", want)
		}
	}
}

// istio/cluster/'s pods spread over Kubernetes nodes, and a drain takes
// one at a time: a master and its replica do not go down together.
func TestIstioClusterSpread(t *testing.T) {
	docs := istioClusterDocs(t)
	var sts struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				Affinity struct {
					PodAntiAffinity struct {
						Preferred []struct {
							Term struct {
								TopologyKey   string        `json:"topologyKey"`
								LabelSelector labelSelector `json:"labelSelector"`
							} `json:"podAffinityTerm"`
						} `json:"preferredDuringSchedulingIgnoredDuringExecution"`
					} `json:"podAntiAffinity"`
				} `json:"affinity"`
			} `json:"spec"`
		} `json:"template"`
	}
	decodeObject(t, findDoc(t, docs, "StatefulSet", "redis-cluster"), &sts)
	pods := sts.Template.Metadata.Labels
	spread := false
	for _, p := range sts.Template.Spec.Affinity.PodAntiAffinity.Preferred {
		spread = spread || p.Term.TopologyKey == "kubernetes.io/hostname" && maps.Equal(p.Term.LabelSelector.MatchLabels, pods)
	}
	if !spread {
		t.Errorf("StatefulSet: no pod anti-affinity on kubernetes.io/hostname for its pods %v", pods)
	}
	var pdb struct {
		MaxUnavailable int           `json:"maxUnavailable"`
		Selector       labelSelector `json:"selector"`
	}
	decodeObject(t, findDoc(t, docs, "PodDisruptionBudget", "redis-cluster"), &pdb)
	if pdb.MaxUnavailable != 1 || !maps.Equal(pdb.Selector.MatchLabels, pods) {
		t.Errorf("PodDisruptionBudget: maxUnavailable %d of %v, want 1 of the StatefulSet's pods %v", pdb.MaxUnavailable, pdb.Selector.MatchLabels, pods)
	}
}

package deploy

import (
	"path/filepath"
	"testing"
)

// The parts of a StatefulSet and a Job that the tests of istio/cluster/
// read, with what least privilege asks of a pod (podSecurity).

type podSecurity struct {
	RunAsNonRoot   *bool `json:"runAsNonRoot"`
	RunAsUser      *int  `json:"runAsUser"`
	SeccompProfile struct {
		Type string `json:"type"`
	} `json:"seccompProfile"`
}

type containerSecurity struct {
	AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
	Capabilities             struct {
		Drop []string `json:"drop"`
		Add  []string `json:"add"`
	} `json:"capabilities"`
	Privileged *bool `json:"privileged"`
}

type podContainer struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
	Args    []string `json:"args"`
	Env     []struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		ValueFrom struct {
			SecretKeyRef struct {
				Name string `json:"name"`
				Key  string `json:"key"`
			} `json:"secretKeyRef"`
			FieldRef struct {
				FieldPath string `json:"fieldPath"`
			} `json:"fieldRef"`
		} `json:"valueFrom"`
	} `json:"env"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
	} `json:"ports"`
	VolumeMounts []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		ReadOnly  bool   `json:"readOnly"`
	} `json:"volumeMounts"`
	SecurityContext containerSecurity `json:"securityContext"`
	Resources       struct {
		Limits map[string]string `json:"limits"`
	} `json:"resources"`
}

type podSpec struct {
	AutomountServiceAccountToken *bool          `json:"automountServiceAccountToken"`
	SecurityContext              podSecurity    `json:"securityContext"`
	Containers                   []podContainer `json:"containers"`
	Volumes                      []struct {
		Name   string `json:"name"`
		Secret *struct {
			SecretName string `json:"secretName"`
			Items      []struct {
				Key  string `json:"key"`
				Path string `json:"path"`
			} `json:"items"`
		} `json:"secret"`
		EmptyDir any `json:"emptyDir"`
	} `json:"volumes"`
}

type podTemplate struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec podSpec `json:"spec"`
}

type statefulSetSpec struct {
	ServiceName string `json:"serviceName"`
	Replicas    int    `json:"replicas"`
	Selector    struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	Template             podTemplate `json:"template"`
	VolumeClaimTemplates []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	} `json:"volumeClaimTemplates"`
}

type jobSpec struct {
	Template podTemplate `json:"template"`
}

type headlessServiceSpec struct {
	ClusterIP                string            `json:"clusterIP"`
	PublishNotReadyAddresses bool              `json:"publishNotReadyAddresses"`
	Selector                 map[string]string `json:"selector"`
}

// checkLeastPrivilege checks what a pod of the cluster's manifests must
// not have: root, privilege escalation, a writable root filesystem, any
// capability, a service account token, a container without a memory
// limit, a Secret mounted writable.
func checkLeastPrivilege(t *testing.T, where string, p podSpec) {
	t.Helper()
	sc := p.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 || sc.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("%s: pod securityContext %+v: want runAsNonRoot, a non-root runAsUser, seccompProfile RuntimeDefault", where, sc)
	}
	if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken must be false: nothing here calls the Kubernetes API", where)
	}
	secrets := map[string]bool{}
	for _, v := range p.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = true
		}
	}
	for _, c := range p.Containers {
		cs := c.SecurityContext
		if cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || cs.ReadOnlyRootFilesystem == nil ||
			!*cs.ReadOnlyRootFilesystem || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" ||
			len(cs.Capabilities.Add) != 0 || cs.Privileged != nil && *cs.Privileged {
			t.Errorf("%s: container %s: securityContext %+v: want no privilege escalation, a read-only root filesystem, every capability dropped", where, c.Name, cs)
		}
		if c.Resources.Limits["memory"] == "" {
			t.Errorf("%s: container %s has no memory limit", where, c.Name)
		}
		for _, m := range c.VolumeMounts {
			if secrets[m.Name] && !m.ReadOnly {
				t.Errorf("%s: container %s mounts Secret volume %s writable", where, c.Name, m.Name)
			}
		}
	}
}

// secretFile returns the Secret and key a container reads at path, from a
// Secret volume mounted at path's directory.
func secretFile(t *testing.T, p podSpec, c podContainer, path string) (secret, key string) {
	t.Helper()
	dir, file := filepath.Split(path)
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) != filepath.Clean(dir) {
			continue
		}
		for _, v := range p.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return v.Secret.SecretName, file
			}
			for _, it := range v.Secret.Items {
				if it.Path == file {
					return v.Secret.SecretName, it.Key
				}
			}
		}
	}
	t.Fatalf("container %s: no Secret volume holds %s", c.Name, path)
	return "", ""
}

package config

import "testing"

// On an ALB, hosts[].target must be a target id of the group (an EC2 instance id or an IP,
// without a port), and no two hosts may be one target of it: copy-pasted instance ids, or one
// host's target the other's address, are refused naming the field, the value and both hosts.
// Two hosts on one instance with their own port_offset are two targets, and load.
func TestALBHostsMustBeTargetsOfTheirOwn(t *testing.T) {
	alb := "balancer:\n  kind: alb\n  target_group_arn: " + exampleARN + "\n" + webService
	mustRefuse(t, alb+"hosts:\n  - {name: a, address: 10.0.0.1, target: i-0a1b2c3d4e5f60001}\n  - {name: b, address: 10.0.0.2, target: i-0a1b2c3d4e5f60001}\n",
		"hosts[1].target", "i-0a1b2c3d4e5f60001:9000", "host b and host a (hosts[0])")
	mustRefuse(t, alb+"hosts:\n  - {name: a, address: 10.0.0.1, target: 10.0.0.2}\n  - {name: b, address: 10.0.0.2}\n",
		"hosts[1].address", "10.0.0.2:9000", "host b and host a (hosts[0])")
	for _, target := range []string{"10.0.0.5:9000", "i-0a1b 2c3d", "web-1", "i-XYZ"} {
		mustRefuse(t, alb+"hosts:\n  - {name: a, address: 10.0.0.1, target: \""+target+"\"}\n  - {name: b, address: 10.0.0.2}\n",
			"hosts[0].target", target, "an EC2 instance id", "without a port")
	}
	for _, hosts := range []string{
		"hosts:\n  - {name: a, address: 10.0.0.1, target: i-0a1b2c3d4e5f60001}\n  - {name: b, address: 10.0.0.2, target: i-0a1b2c3d}\n",
		"hosts:\n  - {name: a, address: 10.0.0.1, target: i-0a1b2c3d4e5f60001}\n  - {name: b, address: 10.0.0.1, target: i-0a1b2c3d4e5f60001, port_offset: 100}\n",
		"hosts:\n  - {name: a, address: 10.0.0.1, target: '2001:db8::7'}\n  - {name: b, address: 10.0.0.2}\n",
	} {
		if _, err := Load(writeConfig(t, alb+hosts)); err != nil {
			t.Errorf("%s: %v", hosts, err)
		}
	}
}

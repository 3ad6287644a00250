package config

// EnvNotConfig lists the ZERO502_* environment variables that are not config keys, each read by
// one command, script or test; Load accepts them and refuses every other ZERO502_* variable that
// names no config key. Add a variable here when code starts reading it.
func EnvNotConfig() []string {
	return []string{
		"ZERO502_ALB_ENDPOINT",        // deploy, provision, invariants --live: the ELBv2 API endpoint (a local emulator)
		"ZERO502_ROUTE53_ENDPOINT",    // deploy of edges (balancer.kind dns): the Route 53 API endpoint (a local double)
		"ZERO502_CLOUDWATCH_ENDPOINT", // deploy with rollout.alarms: the CloudWatch API endpoint (infra/alarms; a local double)
		"ZERO502_SSH_OPTS",            // deploy: extra options of the system ssh to hosts[].ssh (e.g. -i KEY)
		"ZERO502_LB_ADMIN_TOKEN",      // zero502 lb, mesh lb-sync: the LB admin API's bearer token, kept out of files and argv
		"ZERO502_EDGE_ADMIN_TOKEN",    // zero502 edge forward: the admin API's bearer token, kept out of argv
		"ZERO502_MESH_KEY",            // zero502 mesh serve, mesh lb-sync, lb --backends-from-mesh: the mesh's shared key signing bulletins and routes, kept out of argv
		"ZERO502_ALERT_WEBHOOK",       // zero502 mesh serve, edgepick survey: the alert webhook URL (often secret), kept out of argv
		"ZERO502_BIN",                 // bench/*.sh and infra/lb/acceptance: a prebuilt zero502 binary to test
		// What a lifecycle hook gets (deployer.HookEnv): a hook that runs zero502 passes them on.
		"ZERO502_HOOK", "ZERO502_VERSION", "ZERO502_DEPLOYER", "ZERO502_FLEET_HOSTS", "ZERO502_HOST", "ZERO502_SERVICE",
		"ZERO502_TARGET", "ZERO502_PREVIOUS_VERSION", "ZERO502_RUNNING", "ZERO502_ERROR",
		// Tests only.
		"ZERO502_ACCEPTANCE_RACE",
		"ZERO502_TEST_LB_ENGINE",
		"ZERO502_TEST_EDGE_ENGINE",
		"ZERO502_INVARIANT_CONFIGS",
		"ZERO502_APP_TEST_CHILD",
		"ZERO502_PROCESS_TEST_STARTER",
		"ZERO502_WATCHDOG_TEST_PARENT_PID",
	}
}

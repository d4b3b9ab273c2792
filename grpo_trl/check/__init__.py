"""What ``grpo-trl check`` runs over a loaded ``Recipe``: validation, readiness, the plan and the memory plan."""

"""The decider: deployment schedules and their runner, traffic profiles, schedule proposals."""

"""Generators: workloads, input distributions, random schedules and whole cases."""

"""Leases: grant, inspect, renew, report, release (client scope), and the expiry sweeper."""

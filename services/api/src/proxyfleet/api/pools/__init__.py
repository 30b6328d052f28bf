"""Pools declared through the API: create or replace, inspect, merge-patch, delete (admin)."""

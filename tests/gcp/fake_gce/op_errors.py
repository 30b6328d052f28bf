"""The `error.errors[]` of an operation that fails, worded as Google words them. Pure."""

from __future__ import annotations

from typing import Any

from .faults import Fault


def operation_error(fault: Fault, project: str, scope: str) -> tuple[int, list[dict[str, Any]]]:
    """HTTP status (the operation's httpErrorStatusCode) and its errors."""
    zone = scope.removeprefix("zones/")
    region = str(fault.params.get("region") or zone.rsplit("-", 1)[0])
    match fault.kind:
        case "ZONE_RESOURCE_POOL_EXHAUSTED":
            message = (
                f"The zone 'projects/{project}/zones/{zone}' does not have enough resources"
                " available to fulfill the request.  Try a different zone, or try again later."
            )
            return 503, [{"code": fault.kind, "message": message, "errorDetails": _stockout(zone)}]
        case "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS":
            message = (
                f"The zone 'projects/{project}/zones/{zone}' does not have enough resources"
                " available to fulfill the request.  '(resource type:compute)'."
            )
            return 503, [{"code": fault.kind, "message": message, "errorDetails": _stockout(zone)}]
        case "QUOTA_EXCEEDED":
            quota = str(fault.params.get("quota", "CPUS"))
            limit = float(fault.params.get("limit", 24.0))
            # Project-wide quotas (CPUS_ALL_REGIONS, GPUS_ALL_REGIONS) say "globally".
            where = "globally" if quota.endswith("_ALL_REGIONS") else f"in region {region}"
            message = f"Quota '{quota}' exceeded.  Limit: {limit} {where}."
            details = {
                "quotaInfo": {
                    "metricName": f"compute.googleapis.com/{quota.lower()}",
                    "limitName": f"{quota}-per-project-region",
                    "dimensions": {"region": region},
                    "limit": limit,
                }
            }
            return 403, [{"code": fault.kind, "message": message, "errorDetails": [details]}]
        case "CONCURRENT_OPERATIONS_QUOTA_EXCEEDED":
            message = (
                f"Exceeded limit 'concurrent_operations' on resource 'projects/{project}'."
                " Limit: 1000.0"
            )
            return 403, [{"code": fault.kind, "message": message}]
    raise ValueError(f"fault {fault.kind!r} is not an operation error")


def _stockout(zone: str) -> list[dict[str, Any]]:
    """The details Compute adds to a stockout: a help link and an ErrorInfo."""
    return [
        {
            "help": {
                "links": [
                    {
                        "description": "Troubleshooting documentation",
                        "url": "https://cloud.google.com/compute/docs/resource-error",
                    }
                ]
            }
        },
        {
            "errorInfo": {
                "domain": "compute.googleapis.com",
                "reason": "resource_availability",
                "metadatas": {"zone": zone, "vmType": "", "attachment": "", "zonesAvailable": ""},
            }
        },
    ]

"""What would fix it: remedies as data, their check by simulation, and the advisor."""

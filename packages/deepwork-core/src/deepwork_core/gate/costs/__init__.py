"""What reviews cost before and while they run: prices, estimates and the day cap."""

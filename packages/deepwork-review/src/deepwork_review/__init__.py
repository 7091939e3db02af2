"""DeepWork Reviews: `.deepreview` rules turned into review tasks for changed files."""

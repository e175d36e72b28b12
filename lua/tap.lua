local tap = {} package.loaded.tap = tap
